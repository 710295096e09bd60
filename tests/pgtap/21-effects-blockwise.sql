-- The blockwise fit of tip effects (a group larger than effects.max_component_tips): it maximises
-- the same penalised likelihood as the exact solve, rule by rule, so its effects must equal the
-- exact ones; its std errors hold the other blocks fixed, so they may only be smaller. Each world
-- is fitted exactly first, then again with effects.max_component_tips at 1, which sends every group
-- to the blockwise path.
BEGIN;
SELECT plan(18);

-- One attempt per run (every pass a first-try 1.0, every fail 0.0); the judge's verdict per tip:
-- followed when in the followed list.
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
-- A linked world (stig) (7): four rules of three tips each, 30 attempts per rule; every attempt
-- also retrieves one tip of the next rule, so all twelve tips form one group. Follows and outcomes
-- come from a fixed hash of (rule, attempt, tip): irregular, reproducible, no two columns equal.
-- ---------------------------------------------------------------------------------------------
CREATE TEMP TABLE world_tips AS
SELECT r, k, tests.make_tip('stig', 'bw-' || r, format('blockwise tip %s.%s', r, k)) AS tip_id
  FROM generate_series(1, 4) AS r, generate_series(1, 3) AS k;
CREATE TEMP TABLE world_attempts AS
SELECT r, g,
       ARRAY(SELECT t.tip_id FROM world_tips AS t WHERE t.r = w.r OR (t.r = w.r % 4 + 1 AND t.k = 1 + g % 3) ORDER BY t.tip_id) AS tips,
       ARRAY(SELECT t.tip_id FROM world_tips AS t
              WHERE (t.r = w.r OR (t.r = w.r % 4 + 1 AND t.k = 1 + g % 3))
                AND abs(hashtext(format('follow %s %s %s', w.r, g, t.tip_id))) % 100 < 50 ORDER BY t.tip_id) AS followed
  FROM generate_series(1, 4) AS w (r), generate_series(1, 30) AS g;
-- Tip k = 1 of each rule hurts when followed, k = 3 helps: a pass is likelier without 1, with 3.
SELECT count(pg_temp.attempt('stig', format('bw-%s-%s', a.r, a.g), 'bw-' || a.r, a.tips, a.followed,
                             abs(hashtext(format('outcome %s %s', a.r, a.g))) % 100
                               < 55 - 35 * (SELECT count(*) FROM world_tips AS t WHERE t.tip_id = ANY (a.followed) AND t.k = 1)
                                    + 25 * (SELECT count(*) FROM world_tips AS t WHERE t.tip_id = ANY (a.followed) AND t.k = 3)))
  FROM world_attempts AS a;

SELECT is(ctxgraph.refresh_tip_effects('stig', '2026-12-01'), 12, 'the exact fit fits the twelve tips');
CREATE TEMP TABLE exact_fit AS
SELECT e.tip_id, e.effect, e.std_error, e.component_tips, e.method FROM ctxgraph.tip_effects AS e
  JOIN world_tips AS t ON t.tip_id = e.tip_id;
SELECT is((SELECT count(*) FROM exact_fit WHERE method = 'exact' AND component_tips = 12), 12::bigint,
          'the twelve tips form one group, solved exactly');

UPDATE ctxgraph.parameters SET value = 1 WHERE name = 'effects.max_component_tips';
SELECT is(ctxgraph.refresh_tip_effects('stig', '2026-12-01'), 12, 'the blockwise fit fits the same twelve tips');
SELECT is((SELECT count(*) FROM ctxgraph.tip_effects AS e JOIN world_tips AS t USING (tip_id)
            WHERE e.method = 'blockwise' AND e.component_tips = 12), 12::bigint,
          'every tip of the group says blockwise, in a group of twelve');
SELECT is((SELECT max(abs(e.effect - x.effect)) < 1e-5 FROM ctxgraph.tip_effects AS e JOIN exact_fit AS x USING (tip_id)), true,
          'every blockwise effect equals the exact one within 1e-5');
SELECT is((SELECT bool_and(e.std_error > 0 AND e.std_error <= x.std_error + 1e-9)
             FROM ctxgraph.tip_effects AS e JOIN exact_fit AS x USING (tip_id)), true,
          'every blockwise std error is positive and at most the exact one (the other blocks held fixed)');
SELECT is((SELECT bool_and(abs(e.upper_bound - (e.effect + ctxgraph.param('effects.bound_z') * e.std_error)) < 1e-12)
             FROM ctxgraph.tip_effects AS e JOIN world_tips AS t USING (tip_id)), true,
          'the blockwise bounds are effect + bound_z * std error');

-- ---------------------------------------------------------------------------------------------
-- Explaining away and a hopeless rule, blockwise (cve) (4). Rule b: M followed only beside H,
-- H and M followed fail (x6), H alone passes (x6), neither fails (x6). Rule c fails for everyone.
-- One attempt of c also retrieves H, so b and c are one group.
-- ---------------------------------------------------------------------------------------------
SELECT tests.make_tip('cve', 'b', 'helpful H') AS h \gset
SELECT tests.make_tip('cve', 'b', 'misleading M') AS m \gset
SELECT tests.make_tip('cve', 'c', 'X') AS x \gset
SELECT count(pg_temp.attempt('cve', 'b-' || g, 'b', ARRAY[:h, :m]::bigint[],
                             CASE WHEN g <= 6 THEN ARRAY[:h, :m] WHEN g <= 12 THEN ARRAY[:h] ELSE '{}' END::bigint[], g BETWEEN 7 AND 12))
  FROM generate_series(1, 18) AS g;
SELECT count(pg_temp.attempt('cve', 'c-' || g, 'c', CASE WHEN g = 1 THEN ARRAY[:x, :h] ELSE ARRAY[:x] END::bigint[],
                             CASE WHEN g % 2 = 0 THEN ARRAY[:x] ELSE '{}' END::bigint[], false))
  FROM generate_series(1, 8) AS g;
SELECT is(ctxgraph.refresh_tip_effects('cve', '2026-12-01'), 3, 'blockwise: the cve tips are fitted');
SELECT ok(effect > 0 AND method = 'blockwise', 'blockwise explaining away: H has a positive effect') FROM ctxgraph.tip_effects WHERE tip_id = :h;
SELECT ok(upper_bound < 0, 'blockwise explaining away: M is blamed (upper bound below zero)') FROM ctxgraph.tip_effects WHERE tip_id = :m;
SELECT ok(abs(effect) < 0.01 AND upper_bound > 0, 'blockwise: X, on a rule that fails for everyone, is not blamed')
  FROM ctxgraph.tip_effects WHERE tip_id = :x;

-- ---------------------------------------------------------------------------------------------
-- Sweeps and parameters (5)
-- ---------------------------------------------------------------------------------------------
SELECT ok((parameters->>'iterations')::integer < ctxgraph.param('effects.max_sweeps'),
          'the blockwise fit settled before effects.max_sweeps') FROM ctxgraph.tip_effects WHERE tip_id = :h;
SELECT is((parameters->>'effects.max_sweeps')::float8, ctxgraph.param('effects.max_sweeps'),
          'the fit records effects.max_sweeps among its parameters') FROM ctxgraph.tip_effects WHERE tip_id = :h;
UPDATE ctxgraph.parameters SET value = 1 WHERE name = 'effects.max_sweeps';
SELECT is(ctxgraph.refresh_tip_effects('stig', '2026-12-01'), 12, 'a fit cut short by effects.max_sweeps still writes every tip');
SELECT is((SELECT bool_and((e.parameters->>'iterations')::integer = 1) FROM ctxgraph.tip_effects AS e JOIN world_tips AS t USING (tip_id)),
          true, 'and says it took the one sweep it was allowed');
UPDATE ctxgraph.parameters SET value = 0 WHERE name = 'effects.max_sweeps';
SELECT throws_ok($$SELECT ctxgraph.refresh_tip_effects('stig', '2026-12-01')$$, '22023', NULL,
                 'effects.max_sweeps below 1 is refused (22023)');

-- refresh_tip_effects fills its information matrices on and below the diagonal only: the solvers
-- must answer the same with the upper triangle zeroed as with the whole symmetric matrix.
SELECT is(ctxgraph._ridge_step(ARRAY[4, 0, 0, 2, 5, 0, 1, 3, 6]::double precision[], ARRAY[1, 2, 3]::double precision[], 3),
          ctxgraph._ridge_step(ARRAY[4, 2, 1, 2, 5, 3, 1, 3, 6]::double precision[], ARRAY[1, 2, 3]::double precision[], 3),
          '_ridge_step reads only the lower triangle of A');
SELECT is(ctxgraph._ridge_solve(ARRAY[4, 0, 0, 2, 5, 0, 1, 3, 6]::double precision[], ARRAY[1, 2, 3]::double precision[], 3),
          ctxgraph._ridge_solve(ARRAY[4, 2, 1, 2, 5, 3, 1, 3, 6]::double precision[], ARRAY[1, 2, 3]::double precision[], 3),
          '_ridge_solve reads only the lower triangle of A');

SELECT * FROM finish();
ROLLBACK;
