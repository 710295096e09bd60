-- Verify ctxgraph:view_tip_hit_rates on pg

SELECT skill, tip_id, rule_id, retrievals, scored, attempts, outcome_hit_rate, hit_rate, follow_rate, harm,
       utility_lower_bound, last_retrieved_at, retired, retired_at
  FROM ctxgraph.tip_hit_rates WHERE FALSE;
SELECT tip_id, rule_id, retrievals, scored, attempts, outcome_hit_rate, hit_rate, follow_rate, harm,
       utility_lower_bound, last_retrieved_at, retired, retired_at
  FROM stig.tip_hit_rates WHERE FALSE;
SELECT 1 / COUNT(*) FROM ctxgraph.parameters WHERE name = 'utility.bound_z';
SELECT 1 / COUNT(*) FROM ctxgraph.skill_views WHERE name = 'tip_hit_rates';

-- The ranker and analysts read it (and its skill projections); the writer does not.
SELECT 1 / (COUNT(*) = 2)::int FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_ranker', 'ctxgraph_analyst')
   AND pg_catalog.has_table_privilege(r.oid, 'ctxgraph.tip_hit_rates', 'SELECT')
   AND pg_catalog.has_table_privilege(r.oid, 'stig.tip_hit_rates', 'SELECT');
SELECT 1 / (NOT pg_catalog.has_table_privilege('ctxgraph_writer', 'ctxgraph.tip_hit_rates', 'SELECT'))::int;

-- Behaviour, rolled back: a new tip shows with zero counts; a tip passed on attempt 1 with the
-- judge saying "ignored" has outcome_hit_rate = outcome * confidence, hit_rate weighted by
-- follow.weight.judge_ignored, follow_rate 0, and the Wilson bound at utility.bound_z; retiring
-- it shows. Only stig.tip_hit_rates lists it.
BEGIN;
DO $$
DECLARE
    run   text := 'sqitch-verify-' || gen_random_uuid();
    fresh bigint;
    tip   bigint;
    ids   bigint[];
    a     bigint;
    rate  double precision;
    h     record;
BEGIN
    INSERT INTO stig.tips (rule_id, body) VALUES ('sqitch_verify_rule', 'fresh') RETURNING id INTO fresh;
    INSERT INTO stig.tips (rule_id, body) VALUES ('sqitch_verify_rule', 'probe') RETURNING id INTO tip;
    ids := ARRAY(SELECT ctxgraph.log_retrievals('stig', run, 'sqitch_verify_rule', ARRAY[tip], ARRAY[0.5], '2026-01-01 10:00Z'));
    a := ctxgraph.save_attempt('stig', run, 'sqitch_verify_rule', 1);
    PERFORM ctxgraph.update_retrieval_attempt_ids('stig', ids, a);
    PERFORM ctxgraph.record_outcome('stig', a, true);
    UPDATE stig.tip_retrievals SET tip_followed_llm = false WHERE id = ANY (ids);
    UPDATE stig.tips SET retired_at = '2026-01-02 00:00Z' WHERE id = tip;

    SELECT * INTO h FROM stig.tip_hit_rates AS v WHERE v.tip_id = fresh;
    IF NOT (h.retrievals = 0 AND h.scored = 0 AND h.attempts = 0 AND h.harm = 0 AND h.hit_rate IS NULL
            AND h.outcome_hit_rate IS NULL AND h.utility_lower_bound IS NULL AND NOT h.retired) IS TRUE THEN
        RAISE EXCEPTION 'tip_hit_rates of a new tip: %', h;
    END IF;
    rate := ctxgraph.graded_outcome('stig', true, 1) * ctxgraph.param('outcome.confidence');
    SELECT * INTO h FROM stig.tip_hit_rates AS v WHERE v.tip_id = tip;
    IF NOT (h.retrievals = 1 AND h.scored = 1 AND h.attempts = 1 AND h.rule_id = 'sqitch_verify_rule'
            AND abs(h.outcome_hit_rate - rate) < 1e-9
            AND abs(h.hit_rate - rate * ctxgraph.param('follow.weight.judge_ignored')) < 1e-9
            AND h.follow_rate = 0
            AND abs(h.utility_lower_bound - ctxgraph.wilson_lower(h.hit_rate, 1, ctxgraph.param('utility.bound_z'))) < 1e-9
            AND h.last_retrieved_at = '2026-01-01 10:00Z' AND h.retired AND h.retired_at = '2026-01-02 00:00Z') IS TRUE THEN
        RAISE EXCEPTION 'tip_hit_rates of the probe tip: %', h;
    END IF;
    IF EXISTS (SELECT 1 FROM cve.tip_hit_rates AS v WHERE v.tip_id = tip)
       OR NOT EXISTS (SELECT 1 FROM ctxgraph.tip_hit_rates AS v WHERE v.skill = 'stig' AND v.tip_id = tip) THEN
        RAISE EXCEPTION 'the skill projections of tip_hit_rates are not filtered by skill';
    END IF;
END
$$;
ROLLBACK;
