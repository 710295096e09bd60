-- Verify ctxgraph:function_rule_ranking on pg

SELECT tip_id, tip_rule_id, body, retrievals, attempts, outcome_hit_rate, hit_rate, follow_rate, utility_lower_bound,
       outcome_rank, follow_rank, retired
  FROM ctxgraph.rule_ranking('stig', 'x') WHERE FALSE;
-- Owner's rights, so the ranker, which cannot read the raw log, can run it.
SELECT 1 / (SELECT prosecdef FROM pg_catalog.pg_proc WHERE oid = 'ctxgraph.rule_ranking(text, text)'::regprocedure)::int;
SELECT 1 / has_function_privilege('ctxgraph_ranker', 'ctxgraph.rule_ranking(text, text)', 'EXECUTE')::int;
SELECT 1 / (NOT has_table_privilege('ctxgraph_ranker', 'ctxgraph.tip_retrievals', 'SELECT'))::int;
-- Behaviour, rolled back: a tip retrieved for the rule is a candidate even if learned elsewhere;
-- an ignored perfect tip drops below a followed one after follow weighting.
DO $$
DECLARE
    own   bigint;
    other bigint;
    r     record;
BEGIN
    INSERT INTO stig.runs (id) VALUES ('verify-run');
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'followed tip') RETURNING id INTO own;
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-other', 'ignored tip') RETURNING id INTO other;
    INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, outcome_value, tip_followed_llm)
    VALUES ('verify-run', own, 'verify-rule', 1, 0.8, true), ('verify-run', other, 'verify-rule', 2, 1.0, false);
    IF (SELECT array_agg(x.tip_id ORDER BY x.follow_rank) FROM ctxgraph.rule_ranking('stig', 'verify-rule') AS x)
       IS DISTINCT FROM ARRAY[own, other]
       AND ctxgraph.param('follow.weight.judge_followed') * 0.8 > ctxgraph.param('follow.weight.judge_ignored') THEN
        RAISE EXCEPTION 'verify: rule_ranking did not rank the followed tip first';
    END IF;
    IF (SELECT x.outcome_rank FROM ctxgraph.rule_ranking('stig', 'verify-rule') AS x WHERE x.tip_id = other) <> 1 THEN
        RAISE EXCEPTION 'verify: rule_ranking did not rank the ignored perfect tip first by outcome alone';
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
