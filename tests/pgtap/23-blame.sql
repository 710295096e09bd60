-- The blame model (tip_effects.misleading_probability, fitted by refresh_tip_effects) on small
-- worlds whose answers a reader can check: one tip by hand (exact numbers, one sweep, the rule's
-- pass rate fixed at 0.5), a misleading tip retrieved and followed beside a helpful one (only the
-- misleading one is blamed), a rule that fails for everyone (nothing is blamed), two tips always
-- followed together (one shared probability), and what eviction and harmful_when_followed do with
-- it, what a verdict means beside its base rate and its cosine. Every attempt is a first try in a run of its own, so a pass is 1.0. The blame model fits one
-- harm share per skill (how often a misleading tip's failure breaks the system), so the worlds
-- whose failures are clean live in cve and those whose failures broke the system in stig.
BEGIN;
SELECT plan(33);

CREATE FUNCTION pg_temp.attempt(skill text, run_id text, rule_id text, tips bigint[], followed bigint[], passed boolean,
                                failure text DEFAULT 'clean_failure')
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    a bigint;
BEGIN
    a := tests.make_attempt_with_retrievals(skill, run_id, rule_id, 1, tips, passed,
                                            CASE WHEN NOT passed THEN failure END, '2026-11-20 10:00+00');
    UPDATE ctxgraph.tip_retrievals AS r SET tip_followed_llm = (r.tip_id = ANY (followed))
     WHERE r.skill = attempt.skill AND r.attempt_id = a;
    RETURN a;
END
$$;

CREATE FUNCTION pg_temp.blame(tip bigint) RETURNS double precision LANGUAGE sql AS $$
    SELECT e.misleading_probability FROM ctxgraph.tip_effects AS e WHERE e.tip_id = tip
$$;

-- ---------------------------------------------------------------------------------------------
-- By hand (2). One sweep (blame.max_sweeps 1) starts from pi 0.2, eps 0.001; one grid point
-- each fixes the rule's pass rate and its harm share h at 0.5. A judge verdict is right 9 times in 10.
-- A's and B's attempts share four runs, one judged followed and one ignored in each, so half the
-- verdicts of every run say followed: the base rate of following is (0.5 - 0.1) / 0.8 = 0.5, and a
-- tip judged followed was followed with chance 0.9, one judged ignored with 0.1.
-- Tip A: followed in two clean failures, ignored in two passes.
--   not misleading: passes 0.5 * 0.5, failures (0.5 * 0.999)^2                       = 0.0623750625
--   misleading:     passes (0.9 * 0.5)^2, failures (0.9 * 0.5 + 0.1 * 0.5 * 0.999)^2 = 0.0506148755
--   P(misleading) = 0.2 * 0.0506148755 / (0.2 * 0.0506148755 + 0.8 * 0.0623750625) = 0.168652:
--   clean failures are what a rule passing half the time gives anyway.
-- Tip B: the same (its failures in the other two runs), but the failures broke the system: (0.5 * 0.001)^2 against
--   (0.9 * 0.5 + 0.1 * 0.5 * 0.001)^2, so P(misleading) = 0.999994.
-- ---------------------------------------------------------------------------------------------
UPDATE ctxgraph.parameters SET value = 1 WHERE name IN ('blame.base_rate_points', 'blame.harm_share_points', 'blame.max_sweeps');
SELECT tests.make_tip('stig', 'R-hand-a', 'tip A') AS a \gset
SELECT tests.make_tip('stig', 'R-hand-b', 'tip B') AS b \gset
SELECT pg_temp.attempt('stig', 'hand-' || g, 'R-hand-a', ARRAY[:a]::bigint[],
                       CASE WHEN g <= 2 THEN ARRAY[:a]::bigint[] ELSE '{}' END, g > 2)
  FROM generate_series(1, 4) AS g;
SELECT pg_temp.attempt('stig', 'hand-' || g, 'R-hand-b', ARRAY[:b]::bigint[],
                       CASE WHEN g > 2 THEN ARRAY[:b]::bigint[] ELSE '{}' END, g <= 2, 'health_failure')
  FROM generate_series(1, 4) AS g;
SELECT ctxgraph.refresh_tip_effects('stig', '2026-12-01');
SELECT is(round(pg_temp.blame(:a)::numeric, 6), 0.168652, 'by hand: A, followed in two clean failures, 0.168652');
SELECT is(round(pg_temp.blame(:b)::numeric, 6), 0.999994, 'by hand: B, followed in two health failures, 0.999994');
-- By hand (3): two tips of one rule in every attempt, so the block weighs their four subsets
-- (none, C, D, both) with each attempt's factor M = product over the subset of (1 - f). Run
-- hand-cd-1: C judged followed (f 0.9), D ignored (0.1), a health failure, (1 - M) h + M (1 - q) eps;
-- run hand-cd-2: C ignored, D followed, a pass, M q. Prior 0.8 / 0.2 per tip:
--   none 0.64 * 0.0005  * 0.5   = 0.00016         C    0.16 * 0.45005  * 0.45  = 0.0324036
--   D    0.16 * 0.05045 * 0.05  = 0.0004036       both 0.04 * 0.455045 * 0.045 = 0.000819081
--   P(C) = (0.0324036 + 0.000819081) / 0.033786281 = 0.983319; P(D) = 0.036189.
SELECT tests.make_tip('stig', 'R-hand-cd', 'tip C') AS c \gset
SELECT tests.make_tip('stig', 'R-hand-cd', 'tip D') AS d \gset
SELECT pg_temp.attempt('stig', 'hand-cd-1', 'R-hand-cd', ARRAY[:c, :d]::bigint[], ARRAY[:c]::bigint[], false, 'health_failure');
SELECT pg_temp.attempt('stig', 'hand-cd-2', 'R-hand-cd', ARRAY[:c, :d]::bigint[], ARRAY[:d]::bigint[], true);
SELECT ctxgraph.refresh_tip_effects('stig', '2026-12-01');
SELECT is(ARRAY[round(pg_temp.blame(:c)::numeric, 6), round(pg_temp.blame(:d)::numeric, 6)], ARRAY[0.983319, 0.036189],
          'by hand: C and D in both attempts, C followed in the health failure, D in the pass: 0.983319 and 0.036189');
UPDATE ctxgraph.parameters SET value = 5 WHERE name = 'blame.base_rate_points';
UPDATE ctxgraph.parameters SET value = 3 WHERE name = 'blame.harm_share_points';
UPDATE ctxgraph.parameters SET value = 100 WHERE name = 'blame.max_sweeps';

-- ---------------------------------------------------------------------------------------------
-- Followed together (4), in cve. Rule R-pair retrieves M and H in all 12 attempts; H is followed in every
-- one, M in the even ones, which all fail; the odd ones pass. Outcome-only credit gives both the
-- same 50%; the effects already separate them; the blame puts the failures on M alone, since H
-- was followed in every pass.
-- ---------------------------------------------------------------------------------------------
SELECT tests.make_tip('cve', 'R-pair', 'tip M') AS m \gset
SELECT tests.make_tip('cve', 'R-pair', 'tip H') AS h \gset
SELECT pg_temp.attempt('cve', 'pair-' || g, 'R-pair', ARRAY[:m, :h]::bigint[],
                       CASE WHEN g % 2 = 0 THEN ARRAY[:m, :h]::bigint[] ELSE ARRAY[:h]::bigint[] END, g % 2 = 1)
  FROM generate_series(1, 12) AS g;

-- ---------------------------------------------------------------------------------------------
-- A rule that fails for everyone (R-hard, in cve): C followed in even attempts, D in every third,
-- E in every fifth, none of them in attempts 1 and 7; all ten fail cleanly, whoever was followed.
-- The rule's own pass rate explains every failure: nobody is blamed.
-- ---------------------------------------------------------------------------------------------
SELECT tests.make_tip('cve', 'R-hard', 'tip C') AS c \gset
SELECT tests.make_tip('cve', 'R-hard', 'tip D') AS d \gset
SELECT tests.make_tip('cve', 'R-hard', 'tip E') AS e \gset
SELECT pg_temp.attempt('cve', 'hard-' || g, 'R-hard', ARRAY[:c, :d, :e]::bigint[],
                       CASE WHEN g % 2 = 0 THEN ARRAY[:c]::bigint[] ELSE '{}' END
                       || CASE WHEN g % 3 = 0 THEN ARRAY[:d]::bigint[] ELSE '{}' END
                       || CASE WHEN g % 5 = 0 THEN ARRAY[:e]::bigint[] ELSE '{}' END, false)
  FROM generate_series(1, 10) AS g;

-- ---------------------------------------------------------------------------------------------
-- Always followed together (R-same, in stig): S1 and S2 retrieved and followed in the same attempts, which
-- broke the system; the attempts that ignored both passed. No evidence can tell them apart.
-- ---------------------------------------------------------------------------------------------
SELECT tests.make_tip('stig', 'R-same', 'tip S1') AS s1 \gset
SELECT tests.make_tip('stig', 'R-same', 'tip S2') AS s2 \gset
SELECT pg_temp.attempt('stig', 'same-' || g, 'R-same', ARRAY[:s1, :s2]::bigint[],
                       CASE WHEN g % 2 = 0 THEN ARRAY[:s1, :s2]::bigint[] ELSE '{}' END, g % 2 = 1, 'health_failure')
  FROM generate_series(1, 8) AS g;

SELECT ctxgraph.refresh_tip_effects('stig', '2026-12-01');
SELECT ctxgraph.refresh_tip_effects('cve', '2026-12-01');

SELECT is((SELECT outcome_hit_rate FROM cve.tip_hit_rates WHERE tip_id = :m),
          (SELECT outcome_hit_rate FROM cve.tip_hit_rates WHERE tip_id = :h),
          'outcome-only credit cannot tell M from H (0.5 each)');
SELECT cmp_ok(pg_temp.blame(:m), '>', 0.9::double precision, 'M, followed in every failure, is blamed');
SELECT cmp_ok(pg_temp.blame(:h), '<', 0.05::double precision, 'H, followed in every failure beside M and in every pass, is not');
SELECT ok((SELECT parameters ? 'fitted_misleading_share' AND parameters ->> 'blame_method' = 'exact'
                  AND (parameters ->> 'blame_converged')::boolean
             FROM ctxgraph.tip_effects WHERE tip_id = :m),
          'the fit records its method, that it settled, and the shares it fitted');

SELECT ok(pg_temp.blame(:c) < 0.5 AND pg_temp.blame(:d) < 0.5 AND pg_temp.blame(:e) < 0.5,
          'a rule that fails for everyone: none of C, D, E is blamed');
SELECT cmp_ok(pg_temp.blame(:c), '<', pg_temp.blame(:m) - 0.5,
              'C, followed in five failures as M in six, is blamed far less: its rule fails without it too');

SELECT is(pg_temp.blame(:s1), pg_temp.blame(:s2), 'S1 and S2, never apart, share one probability');
SELECT cmp_ok(pg_temp.blame(:s1), '>', 0.9::double precision, 'and it is high: the attempts following them broke the system');

-- ---------------------------------------------------------------------------------------------
-- What consumers do with it (9).
-- ---------------------------------------------------------------------------------------------
-- A (followed in two failures, ignored in two passes) sits near the line either way; the others
-- are clear.
SELECT ok((SELECT array_agg(tip_id) FROM ctxgraph.harmful_when_followed) @> ARRAY[:b, :m, :s1, :s2]::bigint[]
          AND NOT (SELECT array_agg(tip_id) FROM ctxgraph.harmful_when_followed) && ARRAY[:h, :c, :d, :e]::bigint[],
          'harmful_when_followed lists B, M, S1 and S2 (blamed above blame.misleading_above), not H, C, D or E');
SELECT set_eq($$SELECT tip_id, split_part(reason, ':', 1) FROM ctxgraph.evict_tips('stig', '2026-12-01', true)
                UNION ALL
                SELECT tip_id, split_part(reason, ':', 1) FROM ctxgraph.evict_tips('cve', '2026-12-01', true)$$,
              format($$VALUES (%s::bigint, 'harm'), (%s, 'harmful when followed'), (%s, 'harm'), (%s, 'harm')$$,
                     :b, :m, :s1, :s2),
              'evict_tips proposes B, S1, S2 for harm and M (no health failure) as harmful when followed; not A, too little support');
SELECT matches((SELECT reason FROM ctxgraph.tip_evidence('cve', '2026-12-01') WHERE tip_id = :m),
               '^harmful when followed: misleading probability 0\.9[0-9] \(effect -[0-9.]+\) over 12 attempts, followed in 6\.0$',
               'M''s reason gives its misleading probability, its effect and its support');
SELECT matches((SELECT reason FROM ctxgraph.tip_evidence('stig', '2026-12-01') WHERE tip_id = :s1),
               ', always followed together with 1 other tips$', 'S1''s reason says it was always followed with another tip');
SELECT is_empty(format($$SELECT tip_id FROM ctxgraph.evict_tips('stig', '2026-12-01', true) WHERE tip_id = %s
                         UNION ALL
                         SELECT tip_id FROM ctxgraph.evict_tips('cve', '2026-12-01', true) WHERE tip_id IN (%s, %s, %s, %s)$$,
                       :a, :h, :c, :d, :e),
                'A, H, C, D and E are not proposed');
UPDATE ctxgraph.parameters SET value = 0.999 WHERE name = 'blame.misleading_above';
SELECT set_eq($$SELECT tip_id FROM ctxgraph.harmful_when_followed$$,
              format('VALUES (%s::bigint), (%s), (%s)', :b, :s1, :s2),
              'a stricter blame.misleading_above lists fewer: B, S1 and S2 (M, on clean failures only, stays below 0.999)');
UPDATE ctxgraph.parameters SET value = 0.5 WHERE name = 'blame.misleading_above';
-- Retiring asks eviction.min_misleading_probability, listing blame.misleading_above: past M's
-- probability, M is still listed but no longer retired.
UPDATE ctxgraph.parameters SET value = 0.999 WHERE name = 'eviction.min_misleading_probability';
SELECT is_empty(format($$SELECT tip_id FROM ctxgraph.evict_tips('cve', '2026-12-01', true) WHERE tip_id = %s$$, :m),
                'a stricter eviction.min_misleading_probability no longer retires M');
SELECT ok((SELECT array_agg(tip_id) FROM ctxgraph.harmful_when_followed) @> ARRAY[:m]::bigint[],
          'and harmful_when_followed still lists M for a reader');
UPDATE ctxgraph.parameters SET value = 0.6 WHERE name = 'eviction.min_misleading_probability';

-- ---------------------------------------------------------------------------------------------
-- The work budget (3). One sweep over cve evaluates subsets x attempts x 15 grid cells: R-pair
-- 2^2 x 12 x 15 = 720 and R-hard 2^3 x 10 x 15 = 1,200, 1,920 in all. Under 1,700 the blocks
-- shrink to one tip each (720 + 3 x 2 x 10 x 15 = 1,620); under 1,000 not even that fits, and each
-- rule's pass rate and harm share become point estimates (mean_field), whose sweep reads each
-- unit once: the same tips come out blamed and cleared.
-- ---------------------------------------------------------------------------------------------
UPDATE ctxgraph.parameters SET value = 1700 WHERE name = 'blame.max_work';
SELECT ctxgraph.refresh_tip_effects('cve', '2026-12-01');
SELECT results_eq(format($$SELECT parameters ->> 'blame_block_tips', parameters ->> 'blame_method', pg_temp.blame(tip_id) > 0.5
                             FROM ctxgraph.tip_effects WHERE tip_id = %s$$, :m),
                  $$VALUES ('1', 'partitioned', true)$$,
                  'over blame.max_work the blocks shrink to one tip each, and M is still blamed');
UPDATE ctxgraph.parameters SET value = 1000 WHERE name = 'blame.max_work';
SELECT ctxgraph.refresh_tip_effects('cve', '2026-12-01');
SELECT is((SELECT count(*) FROM ctxgraph.tip_effects
            WHERE skill = 'cve' AND misleading_probability IS NOT NULL AND parameters ->> 'blame_method' = 'mean_field'
              AND (parameters ->> 'blame_converged')::boolean),
          (SELECT count(*) FROM ctxgraph.tip_effects WHERE skill = 'cve'),
          'over blame.max_work even for one-tip blocks: every cve tip is fitted with the rules at point estimates, and it settled');
SELECT ok(pg_temp.blame(:m) > 0.9 AND pg_temp.blame(:h) < 0.05
          AND pg_temp.blame(:c) < 0.5 AND pg_temp.blame(:d) < 0.5 AND pg_temp.blame(:e) < 0.5
          AND (SELECT array_agg(tip_id) FROM ctxgraph.harmful_when_followed WHERE skill = 'cve') = ARRAY[:m]::bigint[],
          'and it tells the exact fit''s story: M blamed and listed, H (followed beside M) cleared, C, D and E not blamed');
SELECT ok((SELECT bool_and((parameters ->> 'blame_moving_tips')::int = 0 AND (parameters ->> 'blame_last_tip_change')::float8 < 1e-4)
             FROM ctxgraph.tip_effects WHERE skill = 'cve'),
          'settled, it records that no tip moved in its last sweep');
UPDATE ctxgraph.parameters SET value = 1 WHERE name = 'blame.max_sweeps';
SELECT ctxgraph.refresh_tip_effects('cve', '2026-12-01');
SELECT ok((SELECT bool_and(NOT (parameters ->> 'blame_converged')::boolean AND parameters ->> 'blame_sweeps' = '1'
                           AND (parameters ->> 'blame_moving_tips')::int > 0
                           AND (parameters ->> 'blame_last_tip_change')::float8 > 1e-3)
             FROM ctxgraph.tip_effects WHERE skill = 'cve'),
          'cut off after one sweep, it says it did not settle and how many tips were still moving, and how far');
UPDATE ctxgraph.parameters SET value = 100 WHERE name = 'blame.max_sweeps';
UPDATE ctxgraph.parameters SET value = 1e7 WHERE name = 'blame.max_work';

-- ---------------------------------------------------------------------------------------------
-- What a verdict means (5), in a skill of its own (web). A verdict right 9 times in 10 means 0.9
-- only when scripts follow half the tips they see; where they follow 3 in 10, a "followed" verdict
-- means 0.27 / (0.27 + 0.07).
-- The cosine beside the judge: rule R-bg's 40 attempts retrieve G1 and G2, judged followed with
-- cosines near 0.8 and ignored near 0.4 (a small deterministic spread), which teaches the fit how
-- far this skill's cosine tells followed from ignored. Rule R-k retrieves K and N in 12 attempts:
-- N judged followed in all; K judged ignored in all, but its cosine says the failing (even)
-- attempts took it (0.9) and the passing ones did not (0.3). The judge alone clears K; the cosine,
-- as far as the skill's own data trust it, puts the failures on K.
-- ---------------------------------------------------------------------------------------------
SELECT is(round(ctxgraph._follow_chance(true, 0.9, 0.3, NULL, NULL, NULL, NULL)::numeric, 6), round(0.27 / 0.34, 6),
          'a verdict right 9 times in 10, at a base rate of 3 follows in 10, means 0.27 / 0.34');
SELECT ctxgraph.add_skill('web', 'binary');
SELECT tests.make_tip('web', 'R-bg', 'tip G1') AS g1 \gset
SELECT tests.make_tip('web', 'R-bg', 'tip G2') AS g2 \gset
SELECT tests.make_tip('web', 'R-k', 'tip K') AS k \gset
SELECT tests.make_tip('web', 'R-k', 'tip N') AS n \gset
SELECT sum(tests.set_follow('web', a.id, t.followed, CASE WHEN t.followed THEN 0.8 ELSE 0.4 END + 0.1 * sin(g * 7 + t.tip), ARRAY[t.tip]))
  FROM generate_series(1, 40) AS g
 CROSS JOIN LATERAL (SELECT tests.make_attempt_with_retrievals('web', 'bg-' || g, 'R-bg', 1, ARRAY[:g1, :g2]::bigint[],
                                                              g % 4 < 2, CASE WHEN g % 4 >= 2 THEN 'clean_failure' END,
                                                              '2026-11-20 10:00+00') AS id) AS a
 CROSS JOIN LATERAL (VALUES (:g1::bigint, g % 2 = 0), (:g2::bigint, g % 3 = 0)) AS t (tip, followed);
SELECT sum(tests.set_follow('web', a.id, false, CASE WHEN g % 2 = 0 THEN 0.9 ELSE 0.3 END, ARRAY[:k]::bigint[])
           + tests.set_follow('web', a.id, true, 0.8, ARRAY[:n]::bigint[]))
  FROM generate_series(1, 12) AS g
 CROSS JOIN LATERAL (SELECT tests.make_attempt_with_retrievals('web', 'k-' || g, 'R-k', 1, ARRAY[:k, :n]::bigint[],
                                                              g % 2 = 1, CASE WHEN g % 2 = 0 THEN 'clean_failure' END,
                                                              '2026-11-20 10:00+00') AS id) AS a;
-- A judge that is never wrong: the cosine's normals are the two verdicts' own means.
UPDATE ctxgraph.parameters SET value = 1 WHERE name = 'blame.judge_reliability';
SELECT ctxgraph.refresh_tip_effects('web', '2026-12-01');
SELECT results_eq($$SELECT round((parameters #>> '{follow_cosine,followed_mean}')::numeric, 6),
                           round((parameters #>> '{follow_cosine,ignored_mean}')::numeric, 6)
                      FROM ctxgraph.tip_effects WHERE skill = 'web' LIMIT 1$$,
                  $$SELECT round((avg(tip_followed_emb) FILTER (WHERE tip_followed_llm))::numeric, 6),
                           round((avg(tip_followed_emb) FILTER (WHERE NOT tip_followed_llm))::numeric, 6)
                      FROM ctxgraph.tip_retrievals WHERE skill = 'web'$$,
                  'with a judge never wrong, the fitted cosine normals sit at the two verdicts'' means');
UPDATE ctxgraph.parameters SET value = 0.9 WHERE name = 'blame.judge_reliability';
SELECT ctxgraph.refresh_tip_effects('web', '2026-12-01');
SELECT ok(pg_temp.blame(:k) > 0.9 AND pg_temp.blame(:n) < 0.05,
          'the cosine sharpens the judge: K, judged ignored but close to every failing script, is blamed; N is not');
UPDATE ctxgraph.parameters SET value = 0 WHERE name = 'blame.cosine_with_judge';
SELECT ctxgraph.refresh_tip_effects('web', '2026-12-01');
SELECT ok(pg_temp.blame(:k) < 0.5 AND (SELECT parameters -> 'follow_cosine' = 'null' FROM ctxgraph.tip_effects WHERE tip_id = :k),
          'with blame.cosine_with_judge 0 the verdict stands alone: K, judged ignored, is not blamed, and no cosine fit is recorded');
UPDATE ctxgraph.parameters SET value = 1 WHERE name = 'blame.cosine_with_judge';
-- A cosine that says nothing of following (the same for every row) moves nothing.
UPDATE ctxgraph.tip_retrievals SET tip_followed_emb = 0.5 WHERE skill = 'web';
SELECT ctxgraph.refresh_tip_effects('web', '2026-12-01');
SELECT ok(pg_temp.blame(:k) < 0.5 AND (SELECT parameters -> 'follow_cosine' = 'null' FROM ctxgraph.tip_effects WHERE tip_id = :k),
          'a cosine that is the same for every row is not used: K is not blamed');

-- Overwhelming evidence (1), in web: X followed in all 150 failures of R-sure, every one of which
-- broke the system, and in none of its 150 passes; Y and Z followed now and then. Likelihoods of
-- the other subsets fall below e^-745, where exp() raises an error instead of returning 0, and the
-- posterior's sum may round past 1: the fit must survive both.
SELECT tests.make_tip('web', 'R-sure', 'tip X') AS x \gset
SELECT tests.make_tip('web', 'R-sure', 'tip Y') AS y \gset
SELECT tests.make_tip('web', 'R-sure', 'tip Z') AS z \gset
SELECT count(pg_temp.attempt('web', 'sure-' || g, 'R-sure', ARRAY[:x, :y, :z]::bigint[],
                             CASE WHEN g % 2 = 0 THEN ARRAY[:x]::bigint[] ELSE '{}' END
                             || CASE WHEN g % 3 = 0 THEN ARRAY[:y]::bigint[] ELSE '{}' END
                             || CASE WHEN g % 5 = 0 THEN ARRAY[:z]::bigint[] ELSE '{}' END,
                             g % 2 = 1, 'health_failure'))
  FROM generate_series(1, 300) AS g;
SELECT lives_ok($$SELECT ctxgraph.refresh_tip_effects('web', '2026-12-01')$$,
                'overwhelming evidence: the fit neither underflows nor leaves [0, 1]');
SELECT ok(pg_temp.blame(:x) = 1 AND pg_temp.blame(:y) < 0.01 AND pg_temp.blame(:z) < 0.01,
          'and puts every failure on X: 1 for X, next to nothing for Y and Z');

UPDATE ctxgraph.parameters SET value = 0.3 WHERE name = 'blame.judge_reliability';
SELECT throws_ok($$SELECT ctxgraph.refresh_tip_effects('stig', '2026-12-01')$$, '22023', NULL,
                 'a judge reliability below 0.5 is refused (22023), not fitted');

UPDATE ctxgraph.parameters SET value = 0.9 WHERE name = 'blame.judge_reliability';
UPDATE ctxgraph.parameters SET value = 0.5 WHERE name = 'blame.cosine_with_judge';
SELECT throws_ok($$SELECT ctxgraph.refresh_tip_effects('stig', '2026-12-01')$$, '22023', NULL,
                 'blame.cosine_with_judge other than 0 or 1 is refused (22023), not fitted');

SELECT * FROM finish();
ROLLBACK;
