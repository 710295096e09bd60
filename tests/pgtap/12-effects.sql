-- Per-tip effects (ctxgraph.refresh_tip_effects) on small worlds whose answers a reader can check:
-- one tip by hand (exact numbers), a misleading tip followed only beside a helpful one (only the
-- misleading one is blamed), a rule that fails for everyone (nothing is blamed), and tips always
-- followed together (one shared effect). Parameters at their defaults: lambda 1, z 1.645.
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
-- By hand (cve, alone in its skill so the residual variance is its own) (7). Four attempts at one
-- rule; tip A followed in two that fail, ignored in two that pass. Outcomes 0, 0, 1, 1 centre to
-- -.5, -.5, .5, .5; A's weights 1, 1, 0, 0 centre to .5, .5, -.5, -.5: G = 1, b = -1, so
-- effect = b / (G + lambda) = -0.5. Fitted -.5, -.5, 0, 0 centre to -.25, -.25, .25, .25, so the
-- residuals are -.25, -.25, .25, .25: RSS 0.25 over 4 - 1 rule - (1 - lambda / (G + lambda)) =
-- 2.5 degrees of freedom, variance 0.1; std error sqrt(0.1 / 2) = 0.223607; upper bound
-- -0.5 + 1.645 * 0.223607 = -0.132167.
-- ---------------------------------------------------------------------------------------------
SELECT tests.make_tip('cve', 'CVE-1', 'tip A') AS a \gset
SELECT pg_temp.attempt('cve', 'r' || g, 'CVE-1', ARRAY[:a]::bigint[],
                       CASE WHEN g <= 2 THEN ARRAY[:a]::bigint[] ELSE '{}' END, g > 2)
  FROM generate_series(1, 4) AS g;
SELECT is(ctxgraph.refresh_tip_effects('cve', '2026-12-01'), 1, 'refresh_tip_effects fits the one tip with evidence');
SELECT is(round(effect::numeric, 6), -0.5, 'by hand: effect -0.5') FROM ctxgraph.tip_effects WHERE tip_id = :a;
SELECT is(round(std_error::numeric, 6), 0.223607, 'by hand: std error sqrt(0.05)') FROM ctxgraph.tip_effects WHERE tip_id = :a;
SELECT is(round(upper_bound::numeric, 6), -0.132167, 'by hand: upper bound -0.132167') FROM ctxgraph.tip_effects WHERE tip_id = :a;
SELECT is(round(lower_bound::numeric, 6), -0.867833, 'by hand: lower bound -0.867833') FROM ctxgraph.tip_effects WHERE tip_id = :a;
SELECT results_eq(format('SELECT attempts, followed_attempts, co_followed_tips, component_tips, method FROM ctxgraph.tip_effects WHERE tip_id = %s', :a),
                  $$VALUES (4::bigint, 2::float8, 1, 1, 'exact')$$, 'by hand: support 4 attempts, 2 followed, solved exactly alone');
SELECT is((SELECT parameters->>'degrees_of_freedom' FROM ctxgraph.tip_effects WHERE tip_id = :a), '2.5', 'by hand: 2.5 degrees of freedom');

-- ---------------------------------------------------------------------------------------------
-- Explaining away (stig) (6). Rule b: whenever M (misleading) was followed, H (helpful) was too.
-- H and M followed: fail (x3); H alone: pass (x3); neither: fail (x3). Outcome-only credit and the
-- follow-weighted hit rate both smear the failures over H; the effects give H a positive effect
-- and M a negative one whose upper bound is below zero.
-- ---------------------------------------------------------------------------------------------
SELECT tests.make_tip('stig', 'b', 'helpful H') AS h \gset
SELECT tests.make_tip('stig', 'b', 'misleading M') AS m \gset
SELECT pg_temp.attempt('stig', 'b-' || g, 'b', ARRAY[:h, :m]::bigint[],
                       CASE WHEN g <= 3 THEN ARRAY[:h, :m] WHEN g <= 6 THEN ARRAY[:h] ELSE '{}' END::bigint[], g BETWEEN 4 AND 6)
  FROM generate_series(1, 9) AS g;
-- Rule c, which fails for everyone whatever is followed: X and Y in every pattern.
SELECT tests.make_tip('stig', 'c', 'X') AS x \gset
SELECT tests.make_tip('stig', 'c', 'Y') AS y \gset
SELECT pg_temp.attempt('stig', 'c-' || g, 'c', ARRAY[:x, :y]::bigint[],
                       (ARRAY[ARRAY[:x, :y], ARRAY[:x, 0], ARRAY[:y, 0], ARRAY[0, 0]]::bigint[])[1 + g % 4:1 + g % 4], false)
  FROM generate_series(1, 8) AS g;
-- Rule d: W1 and W2 always retrieved and followed together (fail x3), ignored together (pass x3).
SELECT tests.make_tip('stig', 'd', 'W1') AS w1 \gset
SELECT tests.make_tip('stig', 'd', 'W2') AS w2 \gset
SELECT pg_temp.attempt('stig', 'd-' || g, 'd', ARRAY[:w1, :w2]::bigint[],
                       CASE WHEN g <= 3 THEN ARRAY[:w1, :w2] ELSE '{}' END::bigint[], g > 3)
  FROM generate_series(1, 6) AS g;
SELECT is(ctxgraph.refresh_tip_effects('stig', '2026-12-01'), 6, 'refresh_tip_effects fits the stig tips (W1 and W2 as one column)');

SELECT ok(effect > 0, 'explaining away: H, followed in the passes, has a positive effect') FROM ctxgraph.tip_effects WHERE tip_id = :h;
SELECT ok(upper_bound < 0, 'explaining away: M is blamed (upper bound below zero)') FROM ctxgraph.tip_effects WHERE tip_id = :m;
SELECT ok(lower_bound > -1 AND effect < (SELECT effect FROM ctxgraph.tip_effects WHERE tip_id = :h),
          'explaining away: M''s effect is below H''s') FROM ctxgraph.tip_effects WHERE tip_id = :m;
SELECT ok((SELECT hit_rate FROM stig.tip_hit_rates WHERE tip_id = :h) < 0.5,
          'the follow-weighted hit rate still smears the failures over H (why effects are needed)');
SELECT results_eq(format('SELECT component_tips, method FROM ctxgraph.tip_effects WHERE tip_id IN (%s, %s) ORDER BY tip_id', :h, :m),
                  $$VALUES (2, 'exact'), (2, 'exact')$$, 'H and M are solved together');

-- ---------------------------------------------------------------------------------------------
-- A rule that fails for everyone (4): its intercept takes the failures; X and Y are not blamed.
-- ---------------------------------------------------------------------------------------------
SELECT is(effect, 0::float8, 'rule fails for everyone: X''s effect is 0') FROM ctxgraph.tip_effects WHERE tip_id = :x;
SELECT is(effect, 0::float8, 'rule fails for everyone: Y''s effect is 0') FROM ctxgraph.tip_effects WHERE tip_id = :y;
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
