-- Verify ctxgraph:function_tip_evidence on pg

SELECT tip_id, rule_id, attempts, runs, followed_attempts, followed_outcome, outcome_upper_bound, baseline_attempts,
       rule_baseline, shortfall_lower_bound, harm_attempts, harm_share, baseline_harm_share, retired, reason,
       effect, effect_upper_bound, co_followed_tips, effects_as_of
  FROM ctxgraph.tip_evidence('stig', now()) WHERE FALSE;
SELECT skill, tip_id, rule_id, body, reason, attempts, runs, followed_attempts, followed_outcome, outcome_upper_bound,
       rule_baseline, shortfall_lower_bound, harm_attempts, harm_share, baseline_harm_share, effect,
       effect_upper_bound, co_followed_tips
  FROM ctxgraph.eviction_candidates WHERE FALSE;
SELECT tip_id, reason, effect FROM stig.eviction_candidates WHERE FALSE;
SELECT 1 / count(*)::int FROM ctxgraph.parameters WHERE name = 'eviction.min_misleading_probability';
SELECT 1 / (SELECT prosecdef FROM pg_catalog.pg_proc WHERE oid = 'ctxgraph.tip_evidence(text, timestamptz)'::regprocedure)::int;
SELECT 1 / has_table_privilege('ctxgraph_ranker', 'stig.eviction_candidates', 'SELECT')::int;
-- Behaviour, rolled back: over two runs, tip A is followed only in the attempts that fail and B in
-- every attempt. A is blamed (its misleading probability gives it a reason); B, which shared every
-- failure, is not.
DO $$
DECLARE
    tip_a   bigint;
    tip_b   bigint;
    attempt bigint;
    i       integer;
    e       record;
BEGIN
    INSERT INTO stig.tips (rule_id, body, created_at) VALUES ('verify-rule', 'verify tip A', '2026-01-01') RETURNING id INTO tip_a;
    INSERT INTO stig.tips (rule_id, body, created_at) VALUES ('verify-rule', 'verify tip B', '2026-01-01') RETURNING id INTO tip_b;
    FOR i IN 1 .. 12 LOOP
        attempt := ctxgraph.save_attempt('stig', 'verify-run-' || (i % 2), 'verify-rule', i, NULL,
                                         '2026-01-01 10:00+00'::timestamptz + i * interval '1 hour');
        INSERT INTO stig.tip_retrievals (run_id, attempt_id, tip_id, rule_id, rank, tip_followed_llm, retrieved_at)
        VALUES ('verify-run-' || (i % 2), attempt, tip_a, 'verify-rule', 1, i % 3 = 0, '2026-01-01 10:00+00'::timestamptz + i * interval '1 hour'),
               ('verify-run-' || (i % 2), attempt, tip_b, 'verify-rule', 2, true, '2026-01-01 10:00+00'::timestamptz + i * interval '1 hour');
        PERFORM ctxgraph.record_outcome('stig', attempt, i % 3 <> 0, CASE WHEN i % 3 = 0 THEN 'clean_failure' END);
    END LOOP;
    IF to_regprocedure('ctxgraph.refresh_tip_effects(text, timestamptz)') IS NOT NULL THEN
        -- Releases up to @v0.6.0 fitted in PL/pgSQL.
        PERFORM ctxgraph.refresh_tip_effects('stig', '2026-01-02');
    ELSE
        -- Since, the fit (ctxgraph.fit) blames A and clears B; staged here as it would write them.
        PERFORM ctxgraph.tip_fit_staging();
        INSERT INTO pg_temp.ctxgraph_tip_fit (tip_id, effect, std_error, lower_bound, upper_bound, attempts, followed_attempts,
                                              co_followed_tips, component_tips, method, misleading_probability, evidence_version)
        SELECT t.id, f.effect, CASE WHEN f.effect IS NOT NULL THEN 0.5 END, f.effect - 0.8225, f.effect + 0.8225,
               coalesce(f.attempts, 0), coalesce(f.followed, 0),
               CASE WHEN f.effect IS NOT NULL THEN 1 END, CASE WHEN f.effect IS NOT NULL THEN 2 END,
               CASE WHEN f.effect IS NULL THEN 'no_evidence' ELSE 'exact' END, f.misleading, coalesce(st.evidence_version, 0)
          FROM ctxgraph.tips AS t
          LEFT JOIN ctxgraph.tip_stats AS st ON st.skill = t.skill AND st.tip_id = t.id
          LEFT JOIN (VALUES (tip_a, -1.5, 12, 4, 0.95), (tip_b, 0.1, 12, 12, 0.02)) AS f (tip, effect, attempts, followed, misleading)
            ON f.tip = t.id
         WHERE t.skill = 'stig';
        PERFORM ctxgraph.write_tip_fit('stig', '2026-01-02', fp.evidence_version, fp.parameters, '{}')
           FROM ctxgraph._tip_effects_fingerprint('stig') AS fp;
    END IF;
    SELECT * INTO e FROM ctxgraph.tip_evidence('stig', '2026-01-02') AS x WHERE x.tip_id = tip_a;
    IF e.reason IS NULL OR e.reason NOT LIKE 'harmful when followed: misleading probability%' THEN
        RAISE EXCEPTION 'verify: tip A, harmful when followed, has no reason: %', row_to_json(e);
    END IF;
    -- The support and the baseline as the maintained levels give them: 12 attempts over 2 runs,
    -- followed in the 4 failures (i = 3, 6, 9, 12); the rule's other 8 attempts passed on attempt
    -- numbers 1, 2 and 4 to 11: (1.0 + 0.8 + 6 * 0.5) / 8 = 0.6.
    IF (e.attempts, e.runs, e.followed_attempts, e.followed_outcome, round(e.rule_baseline::numeric, 9))
       IS DISTINCT FROM (12::bigint, 2::bigint, 4::double precision, 0::double precision, 0.6::numeric) THEN
        RAISE EXCEPTION 'verify: tip A''s support or baseline is wrong: %', row_to_json(e);
    END IF;
    SELECT * INTO e FROM ctxgraph.tip_evidence('stig', '2026-01-02') AS x WHERE x.tip_id = tip_b;
    IF e.reason IS NOT NULL THEN
        RAISE EXCEPTION 'verify: tip B, followed beside A, was blamed: %', row_to_json(e);
    END IF;
    -- Restored after attempt 6, A is judged on attempts 7 to 12 (followed in 9 and 12), but its
    -- earlier attempts stay out of the baseline: still 0.6, not (0.6 * 8) / 10.
    INSERT INTO ctxgraph.tip_evictions (skill, tip_id, retired_at, reason, evidence, restored_at)
    VALUES ('stig', tip_a, '2026-01-01 16:10+00', 'verify', '{}', '2026-01-01 16:20+00');
    SELECT * INTO e FROM ctxgraph.tip_evidence('stig', '2026-01-02') AS x WHERE x.tip_id = tip_a;
    IF (e.followed_attempts, round(e.rule_baseline::numeric, 9)) IS DISTINCT FROM (2::double precision, 0.6::numeric) THEN
        RAISE EXCEPTION 'verify: restored tip A''s support or baseline is wrong: %', row_to_json(e);
    END IF;
    -- An unknown skill is an error, not an empty answer.
    BEGIN
        PERFORM ctxgraph.tip_evidence('nosuch', now());
        RAISE EXCEPTION 'verify: tip_evidence answered for an unknown skill';
    EXCEPTION WHEN invalid_parameter_value THEN NULL;
    END;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
