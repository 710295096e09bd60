-- Verify ctxgraph:view_eviction_candidates on pg

SELECT skill, tip_id, rule_id, body, reason, attempts, runs, followed_attempts, followed_outcome,
       outcome_upper_bound, rule_baseline, shortfall_lower_bound, harm_attempts, harm_share, baseline_harm_share
  FROM ctxgraph.eviction_candidates WHERE FALSE;
SELECT tip_id, rule_id, body, reason, attempts, runs, followed_attempts, followed_outcome,
       outcome_upper_bound, rule_baseline, shortfall_lower_bound, harm_attempts, harm_share, baseline_harm_share
  FROM stig.eviction_candidates WHERE FALSE;
SELECT 1 / COUNT(*) FROM ctxgraph.skill_views WHERE name = 'eviction_candidates';
SELECT 1 / (COUNT(*) = 2)::int FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_ranker', 'ctxgraph_analyst')
   AND pg_catalog.has_table_privilege(r.oid, 'ctxgraph.eviction_candidates', 'SELECT')
   AND pg_catalog.has_table_privilege(r.oid, 'stig.eviction_candidates', 'SELECT');
SELECT 1 / (NOT pg_catalog.has_table_privilege('ctxgraph_writer', 'ctxgraph.eviction_candidates', 'SELECT'))::int;

-- Behaviour, rolled back: a tip followed in 3 clean failures (3 runs) on a rule whose other
-- attempts pass is listed exactly when tip_evidence gives it a reason (with the default
-- parameters it does), and no longer once it is retired.
BEGIN;
DO $$
DECLARE
    run  text := 'sqitch-verify-' || gen_random_uuid();
    rule text := 'sqitch_verify_rule_' || gen_random_uuid();
    bad  bigint;
    good bigint;
    ids  bigint[];
    a    bigint;
    i    integer;
    e    record;
BEGIN
    INSERT INTO stig.tips (rule_id, body) VALUES (rule, 'bad') RETURNING id INTO bad;
    INSERT INTO stig.tips (rule_id, body) VALUES (rule, 'good') RETURNING id INTO good;
    FOR i IN 1..6 LOOP
        ids := ARRAY(SELECT ctxgraph.log_retrievals('stig', run || i, rule, ARRAY[CASE WHEN i <= 3 THEN bad ELSE good END], ARRAY[0.5]));
        a := ctxgraph.save_attempt('stig', run || i, rule, 1);
        PERFORM ctxgraph.update_retrieval_attempt_ids('stig', ids, a);
        IF i <= 3 THEN
            PERFORM ctxgraph.record_outcome('stig', a, false, 'clean_failure');
        ELSE
            PERFORM ctxgraph.record_outcome('stig', a, true);
        END IF;
        UPDATE stig.tip_retrievals SET tip_followed_llm = true WHERE id = ANY (ids);
    END LOOP;

    SELECT * INTO e FROM ctxgraph.tip_evidence('stig') AS x WHERE x.tip_id = bad;
    IF (SELECT count(*) FROM stig.eviction_candidates AS v
         WHERE v.tip_id = bad AND v.reason = e.reason AND v.body = 'bad' AND v.attempts = e.attempts
           AND v.rule_baseline IS NOT DISTINCT FROM e.rule_baseline
           AND v.outcome_upper_bound IS NOT DISTINCT FROM e.outcome_upper_bound) <> (e.reason IS NOT NULL)::int
       OR EXISTS (SELECT 1 FROM ctxgraph.eviction_candidates AS v
                   WHERE v.tip_id = good AND v.reason IS DISTINCT FROM
                         (SELECT x.reason FROM ctxgraph.tip_evidence('stig') AS x WHERE x.tip_id = good)) THEN
        RAISE EXCEPTION 'eviction_candidates disagrees with tip_evidence: %', e;
    END IF;
    UPDATE stig.tips SET retired_at = now() WHERE id = bad;
    IF EXISTS (SELECT 1 FROM stig.eviction_candidates AS v WHERE v.tip_id = bad) THEN
        RAISE EXCEPTION 'eviction_candidates lists a retired tip';
    END IF;
END
$$;
ROLLBACK;
