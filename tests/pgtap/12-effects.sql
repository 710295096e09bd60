-- Per-tip effects as SQL keeps and shows them. The fit (effects, std errors, bounds, groups, the
-- blame) is the numpy fit's (ctxgraph.fit), whose numbers tests/test_fit.py checks; SQL stores what
-- it writes through write_tip_fit and shows it. tip_hit_rates carries each tip's effect and bounds
-- beside the credit figures they correct (outcome-only credit and the follow-weighted hit rate,
-- which smear a misleading tip's failures over the tips followed with it); fit_state says whether
-- the stored fit is still the fit of the evidence; the fit's reads refuse an unknown skill and a
-- NULL instant rather than answer nothing. The fits here are tests.write_fit's, current when written.
BEGIN;
SELECT plan(12);

-- A world: one attempt per run (so every pass is a first-try 1.0 and every fail 0.0), every tip
-- of the list retrieved, the judge's verdict per tip: followed when in the followed list.
CREATE FUNCTION pg_temp.attempt(skill text, run_id text, rule_id text, tips bigint[], followed bigint[], passed boolean,
                                started_at timestamptz DEFAULT '2026-11-20 10:00+00')
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    a bigint;
BEGIN
    a := tests.make_attempt_with_retrievals(skill, run_id, rule_id, 1, tips, passed,
                                            CASE WHEN NOT passed THEN 'clean_failure' END, started_at);
    UPDATE ctxgraph.tip_retrievals AS r SET tip_followed_llm = (r.tip_id = ANY (followed))
     WHERE r.skill = attempt.skill AND r.attempt_id = a;
    RETURN a;
END
$$;

-- ---------------------------------------------------------------------------------------------
-- The effects in tip_hit_rates (cve) (3). Eight attempts at one rule: tip A ignored in four (3
-- pass, 1 fail) and followed in four (1 pass, 3 fail); tip B of the same rule never retrieved.
-- ---------------------------------------------------------------------------------------------
SELECT tests.make_tip('cve', 'CVE-1', 'tip A') AS a \gset
SELECT tests.make_tip('cve', 'CVE-1', 'tip B, never retrieved') AS b \gset
SELECT pg_temp.attempt('cve', 'r' || g, 'CVE-1', ARRAY[:a]::bigint[],
                       CASE WHEN g <= 4 THEN ARRAY[:a]::bigint[] ELSE '{}' END, g IN (1, 5, 6, 7))
  FROM generate_series(1, 8) AS g;
SELECT is(tests.write_fit('cve', '2026-12-01', ARRAY[:a]::bigint[]), 1,
          'write_tip_fit counts the tips with evidence: A, not B');
SELECT set_eq($$SELECT tip_id, effect, effect_lower_bound, effect_upper_bound FROM cve.tip_hit_rates$$,
              $$SELECT tip_id, effect, lower_bound, upper_bound FROM ctxgraph.tip_effects WHERE skill = 'cve'$$,
              'tip_hit_rates (the skill''s own view too) shows each tip''s effect and bounds as tip_effects holds them');
SELECT results_eq(format($$SELECT e.method, h.effect IS NULL AND h.effect_upper_bound IS NULL
                             FROM ctxgraph.tip_effects AS e JOIN cve.tip_hit_rates AS h USING (tip_id) WHERE tip_id = %s$$, :b),
                  $$VALUES ('no_evidence', true)$$, 'B, never retrieved, has no evidence and so no effect in tip_hit_rates');

-- ---------------------------------------------------------------------------------------------
-- What the effects correct (stig) (2). Rule b: whenever M (misleading) was followed, H (helpful)
-- was too. H and M followed: fail (x6); H alone: pass (x6); neither: fail (x6). Rule c fails for
-- everyone whatever is followed: X and Y in every pattern.
-- ---------------------------------------------------------------------------------------------
SELECT tests.make_tip('stig', 'b', 'helpful H') AS h \gset
SELECT tests.make_tip('stig', 'b', 'misleading M') AS m \gset
SELECT pg_temp.attempt('stig', 'b-' || g, 'b', ARRAY[:h, :m]::bigint[],
                       CASE WHEN g <= 6 THEN ARRAY[:h, :m] WHEN g <= 12 THEN ARRAY[:h] ELSE '{}' END::bigint[], g BETWEEN 7 AND 12)
  FROM generate_series(1, 18) AS g;
SELECT tests.make_tip('stig', 'c', 'X') AS x \gset
SELECT tests.make_tip('stig', 'c', 'Y') AS y \gset
SELECT pg_temp.attempt('stig', 'c-' || g, 'c', ARRAY[:x, :y]::bigint[],
                       (ARRAY[ARRAY[:x, :y], ARRAY[:x, 0], ARRAY[:y, 0], ARRAY[0, 0]]::bigint[])[1 + g % 4:1 + g % 4], false)
  FROM generate_series(1, 8) AS g;
SELECT ok((SELECT hit_rate FROM stig.tip_hit_rates WHERE tip_id = :h) < 0.5,
          'the follow-weighted hit rate smears the failures over H, followed in every pass (why effects are needed)');
SELECT is((SELECT outcome_hit_rate FROM stig.tip_hit_rates WHERE tip_id = :x), 0::float8,
          'outcome-only credit gives X, on a rule that fails for everyone, nothing but failures');

-- ---------------------------------------------------------------------------------------------
-- Whether the stored fit is the evidence's (2)
-- ---------------------------------------------------------------------------------------------
SELECT tests.write_fit('stig', '2026-12-01', ARRAY[:m]::bigint[]);
SELECT results_eq($$SELECT current, parameters_changed, tips_changed, attempts_after, refit FROM ctxgraph.fit_state('stig', '2026-12-01')$$,
                  $$VALUES (true, false, 0::bigint, 0::bigint, NULL::text)$$,
                  'fit_state: the fit just written is current, and nothing needs refitting');
SELECT pg_temp.attempt('stig', 'b-late', 'b', ARRAY[:h, :m]::bigint[], ARRAY[:h]::bigint[], true, '2026-12-02 10:00+00');
SELECT results_eq($$SELECT current, parameters_changed, tips_changed, attempts_after, refit FROM ctxgraph.fit_state('stig', '2026-12-03')$$,
                  $$VALUES (false, false, 2::bigint, 1::bigint, 'ctxgraph fit --skill stig --as-of 2026-12-03T00:00:00.000000Z')$$,
                  'fit_state: an attempt after the fit leaves it stale by its two tips and one attempt, and says what refits');

-- ---------------------------------------------------------------------------------------------
-- Errors (5)
-- ---------------------------------------------------------------------------------------------
SELECT throws_ok($$SELECT * FROM ctxgraph.fit_state('no_such_skill')$$, '22023', NULL, 'fit_state of an unknown skill: 22023');
SELECT throws_ok($$SELECT * FROM ctxgraph.fit_state('stig', NULL)$$, '22004', NULL, 'fit_state with a NULL as_of: 22004');
SELECT throws_ok($$SELECT * FROM ctxgraph.fit_evidence('no_such_skill', '2026-12-01')$$, '22023', NULL,
                 'fit_evidence of an unknown skill: 22023');
SELECT throws_ok($$SELECT * FROM ctxgraph.fit_evidence('stig', NULL)$$, '22004', NULL, 'fit_evidence with a NULL as_of: 22004');
SELECT throws_ok($$SELECT * FROM ctxgraph.fit_snapshot('no_such_skill')$$, '22023', NULL, 'fit_snapshot of an unknown skill: 22023');

SELECT * FROM finish();
ROLLBACK;
