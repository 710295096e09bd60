-- Verify ctxgraph:view_misleading_tips on pg

SELECT skill, tip_id, rule_id, body, attempts, outcome_hit_rate, hit_rate, follow_rate, credit_gap, retired
  FROM ctxgraph.misleading_tips WHERE FALSE;
SELECT tip_id, rule_id, body, attempts, outcome_hit_rate, hit_rate, follow_rate, credit_gap, retired
  FROM stig.misleading_tips WHERE FALSE;
SELECT 1 / (COUNT(*) = 3)::int FROM ctxgraph.parameters
 WHERE name IN ('misleading.min_attempts', 'misleading.min_outcome_hit_rate', 'misleading.max_follow_rate');
SELECT 1 / (COUNT(*) = 2)::int FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_ranker', 'ctxgraph_analyst')
   AND pg_catalog.has_table_privilege(r.oid, 'ctxgraph.misleading_tips', 'SELECT')
   AND pg_catalog.has_table_privilege(r.oid, 'stig.misleading_tips', 'SELECT');
SELECT 1 / (NOT pg_catalog.has_table_privilege('ctxgraph_writer', 'ctxgraph.misleading_tips', 'SELECT'))::int;

-- Behaviour, rolled back: two probe tips, each passed in enough first attempts (one rule each),
-- one ignored by the judge and one followed. Each is listed exactly when its tip_hit_rates row
-- meets the misleading.* thresholds in force (with the defaults: the ignored one only), with
-- credit_gap = outcome_hit_rate - hit_rate.
BEGIN;
DO $$
DECLARE
    run     text := 'sqitch-verify-' || gen_random_uuid();
    n       integer := greatest(ceil(ctxgraph.param('misleading.min_attempts'))::integer, 1);
    tip     bigint;
    verdict boolean;
    ids     bigint[];
    a       bigint;
    i       integer;
    h       record;
    listed  record;
BEGIN
    FOREACH verdict IN ARRAY ARRAY[false, true] LOOP
        INSERT INTO stig.tips (rule_id, body) VALUES ('sqitch_verify_rule', 'probe') RETURNING id INTO tip;
        FOR i IN 1..n LOOP
            ids := ARRAY(SELECT ctxgraph.log_retrievals('stig', run, 'sqitch_verify_rule_' || tip || '_' || i, ARRAY[tip], ARRAY[0.5]));
            a := ctxgraph.save_attempt('stig', run, 'sqitch_verify_rule_' || tip || '_' || i, 1);
            PERFORM ctxgraph.update_retrieval_attempt_ids('stig', ids, a);
            PERFORM ctxgraph.record_outcome('stig', a, true);
            UPDATE stig.tip_retrievals SET tip_followed_llm = verdict WHERE id = ANY (ids);
        END LOOP;
        SELECT * INTO h FROM ctxgraph.tip_hit_rates AS v WHERE v.skill = 'stig' AND v.tip_id = tip;
        SELECT * INTO listed FROM stig.misleading_tips AS m WHERE m.tip_id = tip;
        IF (listed.tip_id IS NOT NULL) IS DISTINCT FROM
           (h.attempts >= ctxgraph.param('misleading.min_attempts')
            AND h.outcome_hit_rate >= ctxgraph.param('misleading.min_outcome_hit_rate')
            AND h.follow_rate <= ctxgraph.param('misleading.max_follow_rate')) THEN
            RAISE EXCEPTION 'misleading_tips listing of a tip the judge says % is wrong: %', verdict, h;
        END IF;
        IF listed.tip_id IS NOT NULL
           AND NOT (abs(listed.credit_gap - (h.outcome_hit_rate - coalesce(h.hit_rate, 0))) < 1e-9
                    AND listed.attempts = n AND listed.body = 'probe' AND NOT listed.retired) IS TRUE THEN
            RAISE EXCEPTION 'misleading_tips row is wrong: %', listed;
        END IF;
    END LOOP;
END
$$;
ROLLBACK;
