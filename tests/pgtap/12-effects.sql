-- Per-tip effects (ctxgraph.refresh_tip_effects) on small worlds whose answers a reader can check:
-- one tip by hand (exact numbers), a misleading tip followed only beside a helpful one (only the
-- misleading one is blamed), a rule that fails for everyone (nothing is blamed), and tips always
-- followed together (one shared effect). The effects are on the log-odds scale; parameters at
-- their defaults (lambda 0.5, z 1.645) but for the first world.
BEGIN;
SELECT plan(22);

-- A world: one attempt per run (so every pass is a first-try 1.0 and every fail 0.0), every tip
-- of the list retrieved, the judge's verdict per tip: followed when in the followed list.
CREATE FUNCTION pg_temp.attempt(skill text, run_id text, rule_id text, tips bigint[], followed bigint[], passed boolean)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    a bigint;
BEGIN
    a := tests.make_attempt_with_retrievals(skill, run_id, rule_id, 1, tips, passed,
                                            CASE WHEN NOT passed THEN 'clean_failure' END, '2026-11-20 10:00+00');
    UPDATE ctxgraph.tip_retrievals AS r SET tip_followed_llm = (r.tip_id = ANY (followed))
     WHERE r.skill = attempt.skill AND r.attempt_id = a;
    RETURN a;
END
$$;

-- ---------------------------------------------------------------------------------------------
-- By hand (cve, binary outcomes) (7). Eight attempts at one rule: tip A ignored in four (3 pass,
-- 1 fail) and followed in four (1 pass, 3 fail). With the penalty all but off (lambda 1e-6), the
-- fit is the two-group logistic regression: intercept logit(3/4) = ln 3, effect
-- logit(1/4) - logit(3/4) = -2 ln 3 = -2.197, variance 1/(4 * 3/16) + 1/(4 * 3/16) = 8/3, so the
-- std error is 1.633 and the bounds -2.197 -/+ 1.645 * 1.633: -4.883 and 0.489.
-- ---------------------------------------------------------------------------------------------
UPDATE ctxgraph.parameters SET value = 1e-6 WHERE name = 'effects.ridge_lambda';
SELECT tests.make_tip('cve', 'CVE-1', 'tip A') AS a \gset
SELECT pg_temp.attempt('cve', 'r' || g, 'CVE-1', ARRAY[:a]::bigint[],
                       CASE WHEN g <= 4 THEN ARRAY[:a]::bigint[] ELSE '{}' END, g IN (1, 5, 6, 7))
  FROM generate_series(1, 8) AS g;
SELECT is(ctxgraph.refresh_tip_effects('cve', '2026-12-01'), 1, 'refresh_tip_effects fits the one tip with evidence');
SELECT is(round(effect::numeric, 3), -2.197, 'by hand: effect -2 ln 3') FROM ctxgraph.tip_effects WHERE tip_id = :a;
SELECT is(round(std_error::numeric, 3), 1.633, 'by hand: std error sqrt(8/3)') FROM ctxgraph.tip_effects WHERE tip_id = :a;
SELECT is(round(upper_bound::numeric, 3), 0.489, 'by hand: upper bound 0.489') FROM ctxgraph.tip_effects WHERE tip_id = :a;
SELECT is(round(lower_bound::numeric, 3), -4.883, 'by hand: lower bound -4.883') FROM ctxgraph.tip_effects WHERE tip_id = :a;
SELECT results_eq(format('SELECT attempts, followed_attempts, co_followed_tips, component_tips, method FROM ctxgraph.tip_effects WHERE tip_id = %s', :a),
                  $$VALUES (8::bigint, 4::float8, 1, 1, 'exact')$$, 'by hand: support 8 attempts, 4 followed, solved exactly alone');
SELECT ok((parameters->>'iterations')::integer < 25, 'by hand: the reweighting settled before the last iteration')
  FROM ctxgraph.tip_effects WHERE tip_id = :a;
UPDATE ctxgraph.parameters SET value = 0.5 WHERE name = 'effects.ridge_lambda';

-- ---------------------------------------------------------------------------------------------
-- Explaining away (stig) (6). Rule b: whenever M (misleading) was followed, H (helpful) was too.
-- H and M followed: fail (x6); H alone: pass (x6); neither: fail (x6). Outcome-only credit and the
-- follow-weighted hit rate both smear the failures over H; the effects give H a positive effect
-- and M a negative one whose upper bound is below zero.
-- ---------------------------------------------------------------------------------------------
SELECT tests.make_tip('stig', 'b', 'helpful H') AS h \gset
SELECT tests.make_tip('stig', 'b', 'misleading M') AS m \gset
SELECT pg_temp.attempt('stig', 'b-' || g, 'b', ARRAY[:h, :m]::bigint[],
                       CASE WHEN g <= 6 THEN ARRAY[:h, :m] WHEN g <= 12 THEN ARRAY[:h] ELSE '{}' END::bigint[], g BETWEEN 7 AND 12)
  FROM generate_series(1, 18) AS g;
-- Rule c, which fails for everyone whatever is followed: X and Y in every pattern.
SELECT tests.make_tip('stig', 'c', 'X') AS x \gset
SELECT tests.make_tip('stig', 'c', 'Y') AS y \gset
SELECT pg_temp.attempt('stig', 'c-' || g, 'c', ARRAY[:x, :y]::bigint[],
                       (ARRAY[ARRAY[:x, :y], ARRAY[:x, 0], ARRAY[:y, 0], ARRAY[0, 0]]::bigint[])[1 + g % 4:1 + g % 4], false)
  FROM generate_series(1, 8) AS g;
-- Rule d: W1 and W2 always retrieved and followed together (fail x6), ignored together (pass x6).
SELECT tests.make_tip('stig', 'd', 'W1') AS w1 \gset
SELECT tests.make_tip('stig', 'd', 'W2') AS w2 \gset
SELECT pg_temp.attempt('stig', 'd-' || g, 'd', ARRAY[:w1, :w2]::bigint[],
                       CASE WHEN g <= 6 THEN ARRAY[:w1, :w2] ELSE '{}' END::bigint[], g > 6)
  FROM generate_series(1, 12) AS g;
SELECT is(ctxgraph.refresh_tip_effects('stig', '2026-12-01'), 6, 'refresh_tip_effects fits the stig tips (W1 and W2 as one column)');

SELECT ok(effect > 0, 'explaining away: H, followed in the passes, has a positive effect') FROM ctxgraph.tip_effects WHERE tip_id = :h;
SELECT ok(upper_bound < 0, 'explaining away: M is blamed (upper bound below zero)') FROM ctxgraph.tip_effects WHERE tip_id = :m;
SELECT ok(effect < (SELECT effect FROM ctxgraph.tip_effects WHERE tip_id = :h),
          'explaining away: M''s effect is below H''s') FROM ctxgraph.tip_effects WHERE tip_id = :m;
SELECT ok((SELECT hit_rate FROM stig.tip_hit_rates WHERE tip_id = :h) < 0.5,
          'the follow-weighted hit rate still smears the failures over H (why effects are needed)');
SELECT results_eq(format('SELECT component_tips, method FROM ctxgraph.tip_effects WHERE tip_id IN (%s, %s) ORDER BY tip_id', :h, :m),
                  $$VALUES (2, 'exact'), (2, 'exact')$$, 'H and M are solved together');

-- ---------------------------------------------------------------------------------------------
-- A rule that fails for everyone (4): its intercept takes the failures; X and Y are not blamed.
-- ---------------------------------------------------------------------------------------------
SELECT ok(abs(effect) < 0.01, 'rule fails for everyone: X''s effect is (all but) 0') FROM ctxgraph.tip_effects WHERE tip_id = :x;
SELECT ok(abs(effect) < 0.01, 'rule fails for everyone: Y''s effect is (all but) 0') FROM ctxgraph.tip_effects WHERE tip_id = :y;
SELECT ok(upper_bound > 0, 'rule fails for everyone: X''s upper bound is above zero') FROM ctxgraph.tip_effects WHERE tip_id = :x;
SELECT is((SELECT outcome_hit_rate FROM stig.tip_hit_rates WHERE tip_id = :x), 0::float8,
          'while outcome-only credit gives X nothing but failures');

-- ---------------------------------------------------------------------------------------------
-- Always followed together (3): one column, one shared effect, both members say so.
-- ---------------------------------------------------------------------------------------------
SELECT is((SELECT effect FROM ctxgraph.tip_effects WHERE tip_id = :w1), (SELECT effect FROM ctxgraph.tip_effects WHERE tip_id = :w2),
          'W1 and W2 share one effect');
SELECT is(co_followed_tips, 2, 'W1 says it shares its column with one other tip') FROM ctxgraph.tip_effects WHERE tip_id = :w2;
SELECT ok(upper_bound < 0, 'W1 and W2, followed only in the failures, are blamed together') FROM ctxgraph.tip_effects WHERE tip_id = :w1;

-- ---------------------------------------------------------------------------------------------
-- Errors (2)
-- ---------------------------------------------------------------------------------------------
SELECT throws_ok($$SELECT ctxgraph.refresh_tip_effects('no_such_skill')$$, '22023', NULL, 'unknown skill: 22023');
SELECT throws_ok($$SELECT ctxgraph.refresh_tip_effects('stig', NULL)$$, '22004', NULL, 'NULL as_of: 22004');

SELECT * FROM finish();
ROLLBACK;
