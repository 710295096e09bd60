-- What the readers of the blame model make of it: harmful_when_followed lists the tips whose
-- tip_effects.misleading_probability is above blame.misleading_above and shows it, most likely
-- first; tip_evidence and evict_tips give a reason only to a tip blamed above
-- eviction.min_misleading_probability that also has eviction's support, and the reason says how
-- likely the tip misleads, its effect, its support and whether it was always followed together
-- with others. The worlds are those whose fit tests/test_fit.py checks (the model's numbers are
-- the numpy fit's, not SQL's); each skill's fit is written here with the probabilities that fit
-- gives them, so every threshold below falls where it falls on the real fit. Every attempt is a
-- first try in a run of its own, so a pass is 1.0. The blame model fits one harm share per skill,
-- so the worlds whose failures are clean live in cve and those whose failures broke the system in
-- stig.
BEGIN;
SELECT plan(11);

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

-- A current fit of every tip of the skill, through the fit's own staging table and write_tip_fit
-- as ctxgraph.fit writes one, with each listed tip's misleading probability and the tips it shares
-- its column with (co_followed_tips, itself included); tests.write_fit cannot give tips of one skill
-- different probabilities. A tip blamed above one half gets effect -1.5, any other 0; a tip the
-- list leaves out is cleared (0.05), one without evidence has none.
CREATE FUNCTION pg_temp.write_fit(skill text, tips bigint[], probabilities double precision[], co_followed integer[])
RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ctxgraph.tip_fit_staging();
    INSERT INTO pg_temp.ctxgraph_tip_fit (tip_id, effect, std_error, lower_bound, upper_bound, attempts, followed_attempts,
                                          co_followed_tips, component_tips, method, misleading_probability, evidence_version)
    SELECT t.id, f.effect, CASE WHEN f.effect IS NOT NULL THEN 0.5 END, f.effect - 1.645 * 0.5, f.effect + 1.645 * 0.5,
           coalesce(s.attempts, 0), least(coalesce(s.followed, 0), coalesce(s.attempts, 0)),
           CASE WHEN f.effect IS NOT NULL THEN coalesce(b.co_followed, 1) END,
           CASE WHEN f.effect IS NOT NULL THEN coalesce(b.co_followed, 1) END,
           CASE WHEN f.effect IS NULL THEN 'no_evidence' ELSE 'exact' END,
           CASE WHEN f.effect IS NOT NULL THEN coalesce(b.probability, 0.05) END,
           coalesce(s.evidence_version, 0)
      FROM ctxgraph.tips AS t
      LEFT JOIN ctxgraph.tip_stats AS s ON s.skill = t.skill AND s.tip_id = t.id
      LEFT JOIN unnest(write_fit.tips, write_fit.probabilities, write_fit.co_followed) AS b (tip_id, probability, co_followed)
             ON b.tip_id = t.id
     CROSS JOIN LATERAL (SELECT CASE WHEN coalesce(s.attempts, 0) = 0 THEN NULL
                                     WHEN b.probability > 0.5 THEN -1.5 ELSE 0.0 END::double precision AS effect) AS f
     WHERE t.skill = write_fit.skill;
    RETURN ctxgraph.write_tip_fit(write_fit.skill, '2026-12-01', fp.evidence_version, fp.parameters,
                                  '{"written_by": "23-blame-consumers"}')
      FROM ctxgraph._tip_effects_fingerprint(write_fit.skill) AS fp;
END
$$;

-- ---------------------------------------------------------------------------------------------
-- The worlds (stig and cve)
-- ---------------------------------------------------------------------------------------------
-- Stig, failures that broke the system. A and B share four runs: A followed in two clean failures
-- and ignored in two passes (a rule passing half the time fails so anyway: 0.48); B the same in
-- the other two runs, but its failures broke the system (0.9999994). C and D of rule R-hand-cd in
-- both of its attempts, C followed in the one that broke the system (0.987), D in the pass (0.067).
SELECT tests.make_tip('stig', 'R-hand-a', 'tip A') AS a \gset
SELECT tests.make_tip('stig', 'R-hand-b', 'tip B') AS b \gset
SELECT pg_temp.attempt('stig', 'hand-' || g, 'R-hand-a', ARRAY[:a]::bigint[],
                       CASE WHEN g <= 2 THEN ARRAY[:a]::bigint[] ELSE '{}' END, g > 2)
  FROM generate_series(1, 4) AS g;
SELECT pg_temp.attempt('stig', 'hand-' || g, 'R-hand-b', ARRAY[:b]::bigint[],
                       CASE WHEN g > 2 THEN ARRAY[:b]::bigint[] ELSE '{}' END, g <= 2, 'health_failure')
  FROM generate_series(1, 4) AS g;
SELECT tests.make_tip('stig', 'R-hand-cd', 'tip C') AS hc \gset
SELECT tests.make_tip('stig', 'R-hand-cd', 'tip D') AS hd \gset
SELECT pg_temp.attempt('stig', 'hand-cd-1', 'R-hand-cd', ARRAY[:hc, :hd]::bigint[], ARRAY[:hc]::bigint[], false, 'health_failure');
SELECT pg_temp.attempt('stig', 'hand-cd-2', 'R-hand-cd', ARRAY[:hc, :hd]::bigint[], ARRAY[:hd]::bigint[], true);
-- R-same: S1 and S2 retrieved and followed in the same attempts, which broke the system; the
-- attempts that ignored both passed. No evidence tells them apart: one column of the fit, one
-- probability (1 - 1e-13).
SELECT tests.make_tip('stig', 'R-same', 'tip S1') AS s1 \gset
SELECT tests.make_tip('stig', 'R-same', 'tip S2') AS s2 \gset
SELECT pg_temp.attempt('stig', 'same-' || g, 'R-same', ARRAY[:s1, :s2]::bigint[],
                       CASE WHEN g % 2 = 0 THEN ARRAY[:s1, :s2]::bigint[] ELSE '{}' END, g % 2 = 1, 'health_failure')
  FROM generate_series(1, 8) AS g;

-- Cve, clean failures. R-pair retrieves M and H in all 12 attempts; H is followed in every one, M
-- in the even ones, which all fail: the failures are M's (0.967), H is cleared (1.5e-6). R-hard
-- fails all ten attempts whoever was followed (C in even attempts, D in every third, E in every
-- fifth): the rule's pass rate explains them, and none of C, D, E is blamed (0.15 to 0.16).
SELECT tests.make_tip('cve', 'R-pair', 'tip M') AS m \gset
SELECT tests.make_tip('cve', 'R-pair', 'tip H') AS h \gset
SELECT pg_temp.attempt('cve', 'pair-' || g, 'R-pair', ARRAY[:m, :h]::bigint[],
                       CASE WHEN g % 2 = 0 THEN ARRAY[:m, :h]::bigint[] ELSE ARRAY[:h]::bigint[] END, g % 2 = 1)
  FROM generate_series(1, 12) AS g;
SELECT tests.make_tip('cve', 'R-hard', 'tip C') AS c \gset
SELECT tests.make_tip('cve', 'R-hard', 'tip D') AS d \gset
SELECT tests.make_tip('cve', 'R-hard', 'tip E') AS e \gset
SELECT pg_temp.attempt('cve', 'hard-' || g, 'R-hard', ARRAY[:c, :d, :e]::bigint[],
                       CASE WHEN g % 2 = 0 THEN ARRAY[:c]::bigint[] ELSE '{}' END
                       || CASE WHEN g % 3 = 0 THEN ARRAY[:d]::bigint[] ELSE '{}' END
                       || CASE WHEN g % 5 = 0 THEN ARRAY[:e]::bigint[] ELSE '{}' END, false)
  FROM generate_series(1, 10) AS g;

SELECT pg_temp.write_fit('stig', ARRAY[:a, :b, :hc, :hd, :s1, :s2]::bigint[],
                         ARRAY[0.4819721, 0.9999994, 0.9873454, 0.0667014, 1 - 1e-13, 1 - 1e-13], ARRAY[1, 1, 1, 1, 2, 2]);
SELECT pg_temp.write_fit('cve', ARRAY[:m, :h, :c, :d, :e]::bigint[],
                         ARRAY[0.9674714, 1.4749e-6, 0.1518179, 0.1576324, 0.1637925], ARRAY[1, 1, 1, 1, 1]);

-- ---------------------------------------------------------------------------------------------
-- What consumers do with it (11)
-- ---------------------------------------------------------------------------------------------
SELECT is((SELECT outcome_hit_rate FROM cve.tip_hit_rates WHERE tip_id = :m),
          (SELECT outcome_hit_rate FROM cve.tip_hit_rates WHERE tip_id = :h),
          'outcome-only credit cannot tell M from H (0.5 each): only the blame can');
SELECT set_eq($$SELECT tip_id FROM ctxgraph.harmful_when_followed WHERE skill IN ('stig', 'cve')$$,
              format('VALUES (%s::bigint), (%s), (%s), (%s), (%s)', :b, :hc, :m, :s1, :s2),
              'harmful_when_followed lists B, C of R-hand-cd, M, S1 and S2 (above blame.misleading_above, 0.5); not A (0.48), H, C, D or E');
SELECT results_eq($$SELECT h.tip_id, h.misleading_probability FROM ctxgraph.harmful_when_followed AS h
                     WHERE h.skill IN ('stig', 'cve')$$,
                  $$SELECT e.tip_id, e.misleading_probability FROM ctxgraph.tip_effects AS e
                     WHERE e.skill IN ('stig', 'cve') AND e.misleading_probability > 0.5
                     ORDER BY e.misleading_probability DESC, e.skill, e.tip_id$$,
                  'harmful_when_followed shows each tip''s misleading_probability, most likely first');
SELECT set_eq($$SELECT tip_id, split_part(reason, ':', 1) FROM ctxgraph.evict_tips('stig', '2026-12-01', true)
                UNION ALL
                SELECT tip_id, split_part(reason, ':', 1) FROM ctxgraph.evict_tips('cve', '2026-12-01', true)$$,
              format($$VALUES (%s::bigint, 'harm'), (%s, 'harmful when followed'), (%s, 'harm'), (%s, 'harm')$$,
                     :b, :m, :s1, :s2),
              'evict_tips proposes B, S1, S2 for harm and M (no health failure) as harmful when followed');
SELECT matches((SELECT reason FROM ctxgraph.tip_evidence('cve', '2026-12-01') WHERE tip_id = :m),
               '^harmful when followed: misleading probability 0\.97 \(effect -1\.50\) over 12 attempts, followed in 6\.0$',
               'M''s reason gives its misleading probability, its effect and its support');
SELECT matches((SELECT reason FROM ctxgraph.tip_evidence('stig', '2026-12-01') WHERE tip_id = :s1),
               '^harm: misleading probability 1\.00 \(effect -1\.50\), followed in 4\.0 attempts that broke the system, always followed together with 1 other tips$',
               'S1''s reason says it was always followed with another tip');
SELECT is_empty(format($$SELECT tip_id FROM ctxgraph.evict_tips('stig', '2026-12-01', true) WHERE tip_id IN (%s, %s)
                         UNION ALL
                         SELECT tip_id FROM ctxgraph.evict_tips('cve', '2026-12-01', true) WHERE tip_id IN (%s, %s, %s, %s)$$,
                       :a, :hd, :h, :c, :d, :e),
                'A, D of R-hand-cd, H, C, D and E, blamed below eviction.min_misleading_probability, are not proposed');
SELECT is((SELECT reason FROM ctxgraph.tip_evidence('stig', '2026-12-01') WHERE tip_id = :hc), NULL::text,
          'C of R-hand-cd, listed as harmful when followed, has no reason to go: 2 attempts, 1 broke the system, too little support');
UPDATE ctxgraph.parameters SET value = 0.999 WHERE name = 'blame.misleading_above';
SELECT set_eq($$SELECT tip_id FROM ctxgraph.harmful_when_followed WHERE skill IN ('stig', 'cve')$$,
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

SELECT * FROM finish();
ROLLBACK;
