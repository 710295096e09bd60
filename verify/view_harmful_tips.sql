-- Verify ctxgraph:view_harmful_tips on pg

SELECT skill, tip_id, rule_id, body, harm, attempts, harm_rate, outcome_hit_rate, hit_rate, follow_rate, retired
  FROM ctxgraph.harmful_tips WHERE FALSE;
SELECT tip_id, rule_id, body, harm, attempts, harm_rate, outcome_hit_rate, hit_rate, follow_rate, retired
  FROM stig.harmful_tips WHERE FALSE;
SELECT 1 / COUNT(*) FROM ctxgraph.skill_views WHERE name = 'harmful_tips';
SELECT 1 / (COUNT(*) = 2)::int FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_ranker', 'ctxgraph_analyst')
   AND pg_catalog.has_table_privilege(r.oid, 'ctxgraph.harmful_tips', 'SELECT')
   AND pg_catalog.has_table_privilege(r.oid, 'stig.harmful_tips', 'SELECT');
SELECT 1 / (NOT pg_catalog.has_table_privilege('ctxgraph_writer', 'ctxgraph.harmful_tips', 'SELECT'))::int;

-- Behaviour, rolled back: a tip followed twice in an attempt that broke the system (and once in
-- one that passed) is listed with harm 2 and harm_rate 2/3; a tip followed only in a clean
-- failure is not.
BEGIN;
DO $$
DECLARE
    run     text := 'sqitch-verify-' || gen_random_uuid();
    harmful bigint;
    clean   bigint;
    ids     bigint[];
    a       bigint;
    h       record;
BEGIN
    INSERT INTO stig.tips (rule_id, body) VALUES ('sqitch_verify_rule', 'harmful') RETURNING id INTO harmful;
    INSERT INTO stig.tips (rule_id, body) VALUES ('sqitch_verify_rule', 'clean') RETURNING id INTO clean;
    ids := ARRAY(SELECT ctxgraph.log_retrievals('stig', run, 'sqitch_verify_rule', ARRAY[harmful, clean], ARRAY[0.5, 0.4]));
    -- the harmful tip is retrieved twice into the failing attempt: harm counts rows, so
    -- harm_rate (harm / scored rows) differs from harm / attempts
    ids := ids || ARRAY(SELECT ctxgraph.log_retrievals('stig', run, 'sqitch_verify_rule', ARRAY[harmful], ARRAY[0.5]));
    a := ctxgraph.save_attempt('stig', run, 'sqitch_verify_rule', 1);
    PERFORM ctxgraph.update_retrieval_attempt_ids('stig', ARRAY[ids[1], ids[3]], a);
    PERFORM ctxgraph.record_outcome('stig', a, false, 'health_failure');
    a := ctxgraph.save_attempt('stig', run, 'sqitch_verify_rule', 2);
    PERFORM ctxgraph.update_retrieval_attempt_ids('stig', ids[2:2], a);
    PERFORM ctxgraph.record_outcome('stig', a, false, 'clean_failure');
    ids := ids || ARRAY(SELECT ctxgraph.log_retrievals('stig', run, 'sqitch_verify_rule', ARRAY[harmful], ARRAY[0.5]));
    a := ctxgraph.save_attempt('stig', run, 'sqitch_verify_rule', 3);
    PERFORM ctxgraph.update_retrieval_attempt_ids('stig', ids[4:4], a);
    PERFORM ctxgraph.record_outcome('stig', a, true);
    UPDATE stig.tip_retrievals SET tip_followed_llm = true WHERE id = ANY (ids);

    SELECT * INTO h FROM stig.harmful_tips AS v WHERE v.tip_id = harmful;
    IF NOT (h.harm = 2 AND h.attempts = 2 AND abs(h.harm_rate - 2.0 / 3) < 1e-12 AND h.body = 'harmful' AND h.follow_rate = 1) IS TRUE THEN
        RAISE EXCEPTION 'harmful_tips row of the harmful probe: %', h;
    END IF;
    IF EXISTS (SELECT 1 FROM ctxgraph.harmful_tips AS v WHERE v.skill = 'stig' AND v.tip_id = clean) THEN
        RAISE EXCEPTION 'harmful_tips lists a tip followed only in a clean failure';
    END IF;
END
$$;
ROLLBACK;
