-- Verify ctxgraph:function_ensure_tip_effects on pg

SELECT skill, evidence_version, as_of, parameters, fitted_at FROM ctxgraph.tip_effect_fits WHERE FALSE;
SELECT 1 / (SELECT prosecdef FROM pg_catalog.pg_proc WHERE oid = 'ctxgraph.ensure_tip_effects(text, timestamptz)'::regprocedure)::int;
SELECT 1 / has_function_privilege('ctxgraph_scorer', 'ctxgraph.ensure_tip_effects(text, timestamptz)', 'EXECUTE')::int;
SELECT 1 / (NOT has_function_privilege('ctxgraph_ranker', 'ctxgraph.ensure_tip_effects(text, timestamptz)', 'EXECUTE'))::int;
SELECT 1 / (NOT has_function_privilege('public', 'ctxgraph._tip_effects_fingerprint(text)', 'EXECUTE'))::int;
-- Behaviour, rolled back: the first call fits, a second with nothing changed reuses the fit, a new
-- scored retrieval makes the next call fit again.
DO $$
DECLARE
    tip     bigint;
    attempt bigint;
BEGIN
    INSERT INTO stig.tips (rule_id, body, created_at) VALUES ('verify-rule', 'verify tip', '2026-01-01') RETURNING id INTO tip;
    attempt := ctxgraph.save_attempt('stig', 'verify-run', 'verify-rule', 1, NULL, '2026-01-01 10:00+00');
    INSERT INTO stig.tip_retrievals (run_id, attempt_id, tip_id, rule_id, rank, tip_followed_llm, retrieved_at)
    VALUES ('verify-run', attempt, tip, 'verify-rule', 1, true, '2026-01-01 10:00+00');
    PERFORM ctxgraph.record_outcome('stig', attempt, true);
    PERFORM ctxgraph.ensure_tip_effects('stig', '2100-01-01');
    PERFORM ctxgraph.ensure_tip_effects('stig', '2100-01-02');
    IF (SELECT as_of FROM ctxgraph.tip_effects WHERE skill = 'stig' AND tip_id = tip) <> '2100-01-01' THEN
        RAISE EXCEPTION 'verify: ensure_tip_effects refit although nothing changed';
    END IF;
    UPDATE stig.tip_retrievals SET tip_followed_llm = false WHERE tip_id = tip;
    PERFORM ctxgraph.ensure_tip_effects('stig', '2100-01-02');
    IF (SELECT as_of FROM ctxgraph.tip_effects WHERE skill = 'stig' AND tip_id = tip) <> '2100-01-02' THEN
        RAISE EXCEPTION 'verify: ensure_tip_effects kept a fit after the evidence changed';
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
