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
    IF NOT (e.effect < 0 AND e.upper_bound < e.effect + 1e-9 + e.std_error * 10 AND e.attempts = 8 AND e.method = 'exact') THEN
        RAISE EXCEPTION 'verify: tip A %', row_to_json(e);
    END IF;
    SELECT * INTO e FROM ctxgraph.tip_effects WHERE skill = 'stig' AND tip_id = tip_b;
    IF abs(e.effect) > 0.01 THEN
        RAISE EXCEPTION 'verify: tip B, followed in every attempt, was given an effect %', row_to_json(e);
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
SELECT 1 / has_function_privilege('ctxgraph_scorer', 'ctxgraph.refresh_tip_effects(text, timestamptz)', 'EXECUTE')::int;
SELECT 1 / (NOT has_function_privilege('ctxgraph_ranker', 'ctxgraph.refresh_tip_effects(text, timestamptz)', 'EXECUTE'))::int;
