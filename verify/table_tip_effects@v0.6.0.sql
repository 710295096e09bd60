-- Verify ctxgraph:table_tip_effects on pg

SELECT skill, tip_id, effect, std_error, lower_bound, upper_bound, attempts, followed_attempts, co_followed_tips, component_tips,
       method, fitted_at, as_of, parameters
  FROM ctxgraph.tip_effects WHERE FALSE;
SELECT 1 / (count(*) = 5)::int FROM ctxgraph.parameters
 WHERE name IN ('effects.ridge_lambda', 'effects.bound_z', 'effects.max_component_tips', 'effects.max_iterations',
                'effects.harmful_below');
-- _ridge_solve on a 2 x 2 system solvable by hand: [[2, 1], [1, 2]] x = [3, 3] gives x = [1, 1] and
-- the inverse [[2, -1], [-1, 2]] / 3, whose diagonal is 2/3.
SELECT 1 / (abs(x[1] - 1) < 1e-12 AND abs(x[2] - 1) < 1e-12
            AND abs(inverse_diagonal[1] - 2.0 / 3) < 1e-12 AND abs(inverse_diagonal[2] - 2.0 / 3) < 1e-12)::int
  FROM ctxgraph._ridge_solve(ARRAY[2, 1, 1, 2]::float8[], ARRAY[3, 3]::float8[], 2);
-- Behaviour, rolled back: in a rule where every attempt that followed tip A failed and every
-- other attempt passed, A's effect is negative and B's (followed everywhere) is all but zero.
DO $$
DECLARE
    tip_a   bigint;
    tip_b   bigint;
    attempt bigint;
    i       integer;
    e       record;
BEGIN
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'verify tip A') RETURNING id INTO tip_a;
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'verify tip B') RETURNING id INTO tip_b;
    FOR i IN 1 .. 8 LOOP
        attempt := ctxgraph.save_attempt('stig', 'verify-run', 'verify-rule', i, NULL, '2026-01-01 10:00+00'::timestamptz + i * interval '1 hour');
        INSERT INTO stig.tip_retrievals (run_id, attempt_id, tip_id, rule_id, rank, tip_followed_llm, retrieved_at)
        VALUES ('verify-run', attempt, tip_a, 'verify-rule', 1, i % 2 = 0, '2026-01-01 10:00+00'::timestamptz + i * interval '1 hour'),
               ('verify-run', attempt, tip_b, 'verify-rule', 2, true, '2026-01-01 10:00+00'::timestamptz + i * interval '1 hour');
        PERFORM ctxgraph.record_outcome('stig', attempt, i % 2 <> 0, CASE WHEN i % 2 = 0 THEN 'clean_failure' END);
    END LOOP;
    PERFORM ctxgraph.refresh_tip_effects('stig', '2026-01-02');
    SELECT * INTO e FROM ctxgraph.tip_effects WHERE skill = 'stig' AND tip_id = tip_a;
    IF NOT (e.effect < 0 AND e.upper_bound < e.effect + 1e-9 + e.std_error * 10 AND e.attempts = 8 AND e.method = 'exact'
            AND e.misleading_probability > 0.5) THEN
        RAISE EXCEPTION 'verify: tip A %', row_to_json(e);
    END IF;
    SELECT * INTO e FROM ctxgraph.tip_effects WHERE skill = 'stig' AND tip_id = tip_b;
    IF abs(e.effect) > 0.01 OR e.misleading_probability > 0.1 THEN
        RAISE EXCEPTION 'verify: tip B, followed in every attempt, was given an effect %', row_to_json(e);
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
SELECT 1 / has_function_privilege('ctxgraph_scorer', 'ctxgraph.refresh_tip_effects(text, timestamptz)', 'EXECUTE')::int;
SELECT 1 / (NOT has_function_privilege('ctxgraph_ranker', 'ctxgraph.refresh_tip_effects(text, timestamptz)', 'EXECUTE'))::int;
-- The blockwise fit reaches the exact fit's optimum (rolled back): two rules linked by a tip
-- retrieved for both, fitted exactly, then again with effects.max_component_tips at 1 so the group
-- is solved blockwise; every effect agrees within 1e-5 and no std error exceeds the exact one.
DO $$
DECLARE
    t       bigint[];
    attempt bigint;
    i       integer;
    bad     integer;
BEGIN
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-r1', 'verify blockwise 1') RETURNING id INTO attempt; t[1] := attempt;
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-r1', 'verify blockwise 2') RETURNING id INTO attempt; t[2] := attempt;
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-r2', 'verify blockwise 3') RETURNING id INTO attempt; t[3] := attempt;
    FOR i IN 1 .. 12 LOOP
        attempt := ctxgraph.save_attempt('stig', 'verify-run', CASE WHEN i <= 6 THEN 'verify-r1' ELSE 'verify-r2' END, i, NULL,
                                         '2026-01-01 10:00+00'::timestamptz + i * interval '1 hour');
        INSERT INTO stig.tip_retrievals (run_id, attempt_id, tip_id, rule_id, rank, tip_followed_llm, retrieved_at)
        SELECT 'verify-run', attempt, x.tip, CASE WHEN i <= 6 THEN 'verify-r1' ELSE 'verify-r2' END, x.ord, x.followed,
               '2026-01-01 10:00+00'::timestamptz + i * interval '1 hour'
          FROM (VALUES (t[1], 1, i % 2 = 0), (t[2], 2, i % 3 = 0), (t[3], 3, i % 4 < 2)) AS x (tip, ord, followed)
         WHERE i <= 6 OR x.tip <> t[2];
        PERFORM ctxgraph.record_outcome('stig', attempt, i % 2 <> 0 OR i % 3 = 0, CASE WHEN NOT (i % 2 <> 0 OR i % 3 = 0) THEN 'clean_failure' END);
    END LOOP;
    PERFORM ctxgraph.refresh_tip_effects('stig', '2026-01-02');
    CREATE TEMP TABLE verify_exact ON COMMIT DROP AS SELECT tip_id, effect, std_error, method FROM ctxgraph.tip_effects WHERE tip_id = ANY (t);
    UPDATE ctxgraph.parameters SET value = 1 WHERE name = 'effects.max_component_tips';
    PERFORM ctxgraph.refresh_tip_effects('stig', '2026-01-02');
    SELECT count(*) INTO bad
      FROM verify_exact AS x JOIN ctxgraph.tip_effects AS e ON e.tip_id = x.tip_id
     WHERE x.method <> 'exact' OR e.method <> 'blockwise' OR abs(e.effect - x.effect) > 1e-5 OR e.std_error > x.std_error + 1e-9;
    IF bad <> 0 OR (SELECT count(*) FROM verify_exact) <> 3 THEN
        RAISE EXCEPTION 'verify: the blockwise fit differs from the exact one in % of 3 tips', bad;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
SELECT 1 / (count(*) = 1)::int FROM ctxgraph.parameters WHERE name = 'effects.max_sweeps';
-- _ridge_step on the same 2 x 2 system: x = [1, 1].
SELECT 1 / (abs(x[1] - 1) < 1e-12 AND abs(x[2] - 1) < 1e-12)::int
  FROM ctxgraph._ridge_step(ARRAY[2, 1, 1, 2]::float8[], ARRAY[3, 3]::float8[], 2) AS x;
SELECT misleading_probability FROM ctxgraph.tip_effects WHERE FALSE;
SELECT 1 / (count(*) = 12)::int FROM ctxgraph.parameters WHERE name LIKE 'blame.%';
-- _follow_chance: a verdict right 9 times in 10 at base rate 0.5 means 0.9; a cosine at mu1 with
-- mu1 - mu0 = spread = 1 multiplies the odds by (0.98 phi(0) + 0.01) / (0.98 phi(1) + 0.01).
SELECT 1 / (abs(ctxgraph._follow_chance(true, 0.9, 0.5, NULL, NULL, NULL, NULL) - 0.9) < 1e-12)::int;
SELECT 1 / (abs(ctxgraph._follow_chance(false, 0.9, 0.5, 1, 1, 0, 1)
                - 0.1 * l.r / (0.1 * l.r + 0.9)) < 1e-12)::int
  FROM (SELECT (0.98 / sqrt(2 * pi()) + 0.01) / (0.98 * exp(-0.5) / sqrt(2 * pi()) + 0.01) AS r) AS l;
-- _aitken_step: steps 0.01 then 0.009 (r 0.9) have 0.009 * 9 still to come; a step that turned back none.
SELECT 1 / (abs(ctxgraph._aitken_step(0.009, 0.01) - 0.009 * 9) < 1e-12 AND ctxgraph._aitken_step(-0.009, 0.01) IS NULL)::int;
-- _aitken_share: steps 0.01 then 0.009 (r 0.9) move 0.2 on by 0.009 * 9; a step that turned back leaves it.
SELECT 1 / (abs(ctxgraph._aitken_share(0.2, 0.009, 0.01) - (0.2 + 0.009 * 9)) < 1e-12
            AND ctxgraph._aitken_share(0.2, -0.009, 0.01) = 0.2)::int;
-- _aitken_mixture: weights stepping 0.01 / 0.009 and -0.01 / -0.009 (r 0.9) move on by 9 steps and
-- still sum to 1; a weight that turned back leaves the whole mixture as it was.
SELECT 1 / (abs((ctxgraph._aitken_mixture(ARRAY[0.6, 0.4], ARRAY[0.009, -0.009], ARRAY[0.01, -0.01], 0.001))[1]
                - (0.6 + 0.009 * 9)) < 1e-12
            AND abs((SELECT sum(w) FROM unnest(ctxgraph._aitken_mixture(ARRAY[0.6, 0.4], ARRAY[0.009, -0.009],
                                                                          ARRAY[0.01, -0.01], 0.001)) AS w) - 1) < 1e-12
            AND ctxgraph._aitken_mixture(ARRAY[0.6, 0.4], ARRAY[0.009, 0.009], ARRAY[0.01, -0.01], 0.001)
                = ARRAY[0.6, 0.4]::double precision[])::int;
SELECT 1 / (NOT has_function_privilege('ctxgraph_scorer', 'ctxgraph._fit_tip_blame(text, timestamptz)', 'EXECUTE'))::int;
SELECT 1 / (NOT has_function_privilege('ctxgraph_scorer', 'ctxgraph._blame_mean_field(double precision, double precision, double precision, integer)', 'EXECUTE'))::int;
-- The temporary-object guard refuses a name another role holds in this session's temporary
-- schema and lets the running role's own through (rolled back).
DO $$
BEGIN
    CREATE TEMP TABLE verify_guard_own (x integer) ON COMMIT DROP;
    PERFORM ctxgraph._refuse_foreign_temp_objects('verify_guard_own', 'verify_guard_absent');
    CREATE ROLE verify_guard_stranger;
    ALTER TABLE pg_temp.verify_guard_own OWNER TO verify_guard_stranger;
    BEGIN
        PERFORM ctxgraph._refuse_foreign_temp_objects('verify_guard_own');
        RAISE EXCEPTION 'verify: _refuse_foreign_temp_objects let another role''s temporary table through';
    EXCEPTION WHEN insufficient_privilege THEN NULL;
    END;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
SELECT 1 / has_function_privilege('ctxgraph_writer', 'ctxgraph._refuse_foreign_temp_objects(text[])', 'EXECUTE')::int;
SELECT 1 / (NOT has_function_privilege('ctxgraph_ranker', 'ctxgraph._refuse_foreign_temp_objects(text[])', 'EXECUTE'))::int;
