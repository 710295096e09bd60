-- Verify ctxgraph:function_tip_evidence on pg

SELECT tip_id, rule_id, attempts, runs, followed_attempts, followed_outcome, outcome_upper_bound, baseline_attempts,
       rule_baseline, shortfall_lower_bound, harm_attempts, harm_share, baseline_harm_share, retired, reason
  FROM ctxgraph.tip_evidence('stig', now()) WHERE FALSE;
SELECT 1 / (SELECT prosecdef FROM pg_catalog.pg_proc WHERE oid = 'ctxgraph.tip_evidence(text, timestamptz)'::regprocedure)::int;
-- Behaviour, rolled back: one attempt's three rows are one attempt of evidence, and its
-- followed outcome is the follow-weighted credit of scored_retrievals.
DO $$
DECLARE
    tip     bigint;
    attempt bigint;
    e       record;
BEGIN
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'verify tip') RETURNING id INTO tip;
    attempt := ctxgraph.save_attempt('stig', 'verify-run', 'verify-rule', 1, NULL, '2026-01-01 10:00+00');
    INSERT INTO stig.tip_retrievals (run_id, attempt_id, tip_id, rule_id, rank, outcome_value, tip_followed_llm, retrieved_at)
    SELECT 'verify-run', attempt, tip, 'verify-rule', g, 0.8, true, '2026-01-01 10:00+00' FROM generate_series(1, 3) AS g;
    SELECT * INTO e FROM ctxgraph.tip_evidence('stig', '2026-01-02') AS x WHERE x.tip_id = tip;
    IF e.attempts <> 1 OR e.runs <> 1 OR abs(e.followed_outcome - 0.8) > 1e-9
       OR abs(e.followed_attempts - ctxgraph.param('follow.weight.judge_followed')) > 1e-9 OR e.reason IS NOT NULL THEN
        RAISE EXCEPTION 'verify: tip_evidence gave %', row_to_json(e);
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
-- A missing threshold is an error (rolled back; with a tip, so that there is an answer to give).
DO $$
BEGIN
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'verify tip');
    DELETE FROM ctxgraph.parameters WHERE name = 'eviction.min_shortfall';
    PERFORM count(*) FROM ctxgraph.tip_evidence('stig', now());
    RAISE EXCEPTION 'verify: tip_evidence answered without eviction.min_shortfall';
EXCEPTION WHEN invalid_parameter_value THEN NULL;
END
$$;
