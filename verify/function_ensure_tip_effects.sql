-- Verify ctxgraph:function_ensure_tip_effects on pg

SELECT skill, evidence_version, as_of, parameters, fitted_at FROM ctxgraph.tip_effect_fits WHERE FALSE;
SELECT 1 / (to_regprocedure('ctxgraph.ensure_tip_effects(text, timestamptz)') IS NULL)::int;
SELECT 1 / (SELECT prosecdef FROM pg_catalog.pg_proc WHERE oid = 'ctxgraph.fit_state(text, timestamptz)'::regprocedure)::int;
SELECT 1 / has_function_privilege('ctxgraph_analyst', 'ctxgraph.fit_state(text, timestamptz)', 'EXECUTE')::int;
SELECT 1 / (NOT has_function_privilege('ctxgraph_ranker', 'ctxgraph.fit_state(text, timestamptz)', 'EXECUTE'))::int;
SELECT 1 / (NOT has_function_privilege('public', 'ctxgraph._tip_effects_fingerprint(text)', 'EXECUTE'))::int;
SELECT 1 / (NOT has_function_privilege('public', 'ctxgraph._fit_changed_tips(text, timestamptz)', 'EXECUTE'))::int;
SELECT 1 / has_function_privilege('ctxgraph_scorer', 'ctxgraph.fit_previous(text, timestamptz)', 'EXECUTE')::int;
SELECT 1 / (NOT has_function_privilege('ctxgraph_analyst', 'ctxgraph.fit_previous(text, timestamptz)', 'EXECUTE'))::int;
-- Behaviour, rolled back: a fit written with the evidence's own fingerprint is current; a new
-- scored retrieval makes it stale by one tip.
DO $$
DECLARE
    tip     bigint;
    attempt bigint;
    state   record;
BEGIN
    INSERT INTO stig.tips (rule_id, body, created_at) VALUES ('verify-rule', 'verify tip', '2026-01-01') RETURNING id INTO tip;
    attempt := ctxgraph.save_attempt('stig', 'verify-run', 'verify-rule', 1, NULL, '2026-01-01 10:00+00');
    INSERT INTO stig.tip_retrievals (run_id, attempt_id, tip_id, rule_id, rank, tip_followed_llm, retrieved_at)
    VALUES ('verify-run', attempt, tip, 'verify-rule', 1, true, '2026-01-01 10:00+00');
    PERFORM ctxgraph.record_outcome('stig', attempt, true);
    PERFORM ctxgraph.tip_fit_staging();
    INSERT INTO pg_temp.ctxgraph_tip_fit (tip_id, effect, std_error, lower_bound, upper_bound, attempts, followed_attempts,
                                          co_followed_tips, component_tips, method, evidence_version)
    SELECT t.id, 0, 1, -1, 1, 1, 1, 1, 1, 'exact', coalesce(s.evidence_version, 0)
      FROM ctxgraph.tips AS t LEFT JOIN ctxgraph.tip_stats AS s ON s.skill = t.skill AND s.tip_id = t.id
     WHERE t.skill = 'stig';
    PERFORM ctxgraph.write_tip_fit('stig', '2100-01-01', fp.evidence_version, fp.parameters, '{}')
       FROM ctxgraph._tip_effects_fingerprint('stig') AS fp;
    state := ctxgraph.fit_state('stig', '2100-01-02');
    IF NOT state.current OR state.tips_changed <> 0 THEN
        RAISE EXCEPTION 'verify: fit_state does not see the fit just written as current';
    END IF;
    UPDATE stig.tip_retrievals SET tip_followed_llm = false WHERE tip_id = tip;
    state := ctxgraph.fit_state('stig', '2100-01-02');
    IF state.current OR state.tips_changed <> 1 OR state.refit IS NULL THEN
        RAISE EXCEPTION 'verify: fit_state does not see that one tip''s evidence changed';
    END IF;
    IF (SELECT p.changed_tips FROM ctxgraph.fit_previous('stig', '2100-01-02') AS p) <> ARRAY[tip] THEN
        RAISE EXCEPTION 'verify: fit_previous does not name the one tip whose evidence changed';
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
