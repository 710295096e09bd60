-- What write_tip_fit accepts and what evict_tips makes of a fit that has not seen all the evidence.
-- A fit is computed outside the database (ctxgraph.fit), so the database cannot redo it; it checks
-- what it can: the stamp is the fingerprint of the evidence versions the staged rows claim, no row
-- claims evidence the tip has not had, every number is finite and within what any fit gives (a
-- larger one overflowed the eviction reads), a tip without evidence carries no numbers, the
-- parameters kept on every row are small. A fit as of an instant before later retrievals is stale
-- for them, and a retiring evict_tips refuses it (55000).
BEGIN;
SELECT plan(15);

SELECT tests.make_tip('stig', 'W-1', 'tip W') AS w \gset
SELECT tests.make_tip('stig', 'W-1', 'tip never retrieved') AS idle \gset
-- W followed in eight attempts over two runs, all of which broke the system.
SELECT count(tests.make_judged_attempt('stig', 'fw-' || (g % 2), 'W-1', g, ARRAY[:w]::bigint[], false, 'health_failure',
                                       '2026-11-20 10:00+00'::timestamptz + g * interval '1 hour', true, 0.9))
  FROM generate_series(1, 8) AS g;

-- A staged fit of every stig tip, W's numbers given; the other tips as tests.write_fit writes them.
CREATE FUNCTION pg_temp.stage(effect double precision, se double precision, co integer, version_bump bigint DEFAULT 0)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ctxgraph.tip_fit_staging();
    INSERT INTO pg_temp.ctxgraph_tip_fit (tip_id, effect, std_error, lower_bound, upper_bound, attempts, followed_attempts,
                                          co_followed_tips, component_tips, method, misleading_probability, evidence_version)
    SELECT t.id,
           CASE WHEN coalesce(s.attempts, 0) > 0 THEN stage.effect END,
           CASE WHEN coalesce(s.attempts, 0) > 0 THEN stage.se END,
           CASE WHEN coalesce(s.attempts, 0) > 0 THEN stage.effect - stage.se END,
           CASE WHEN coalesce(s.attempts, 0) > 0 THEN stage.effect + stage.se END,
           coalesce(s.attempts, 0), 0,
           CASE WHEN coalesce(s.attempts, 0) > 0 THEN stage.co END, CASE WHEN coalesce(s.attempts, 0) > 0 THEN 1 END,
           CASE WHEN coalesce(s.attempts, 0) > 0 THEN 'exact' ELSE 'no_evidence' END,
           CASE WHEN coalesce(s.attempts, 0) > 0 THEN 0.99 END,
           coalesce(s.evidence_version, 0) + stage.version_bump
      FROM ctxgraph.tips AS t LEFT JOIN ctxgraph.tip_stats AS s ON s.skill = t.skill AND s.tip_id = t.id
     WHERE t.skill = 'stig';
END
$$;
CREATE FUNCTION pg_temp.write(fit_parameters jsonb DEFAULT '{}', fingerprint numeric DEFAULT NULL) RETURNS integer
LANGUAGE sql AS $$
    SELECT ctxgraph.write_tip_fit('stig', '2026-12-01', coalesce(fingerprint, fp.evidence_version), fp.parameters, fit_parameters)
      FROM ctxgraph._tip_effects_fingerprint('stig') AS fp
$$;

-- What an incremental fit starts from, before any fit (2)
SELECT is_empty($$SELECT * FROM ctxgraph.fit_previous('stig', '2026-12-01')$$,
                'fit_previous: no row for a skill without a stored fit');
SELECT throws_ok($$SELECT * FROM ctxgraph.fit_previous('stig', 'infinity')$$, '22023', NULL,
                 'fit_previous refuses an as_of of infinity');

-- The stamp and the versions (2)
SELECT pg_temp.stage(-1, 0.5, 1);
SELECT throws_ok($$SELECT pg_temp.write('{}', 12345)$$, '22023',
                 'ctxgraph: the staged fit of stig is refused: evidence_version is not the fingerprint of the staged rows'' evidence versions',
                 'a stamp that is not the fingerprint of the staged evidence versions is refused');
SELECT pg_temp.stage(-1, 0.5, 1, 1);
SELECT throws_ok($$SELECT pg_temp.write()$$, '22023', NULL,
                 'a staged row claiming evidence later than the tip''s own is refused');

-- Numbers (4)
SELECT pg_temp.stage(1e300, 1e300, 1);
SELECT throws_ok($$SELECT pg_temp.write()$$, '22023', NULL,
                 'an effect and std error of 1e300, which overflow the readers'' arithmetic, are refused');
SELECT pg_temp.stage(-1, 0.5, -5);
SELECT throws_ok($$SELECT pg_temp.write()$$, '22023', NULL, 'a negative co_followed_tips is refused');
SELECT pg_temp.stage(-1, 0.5, 1);
UPDATE pg_temp.ctxgraph_tip_fit SET std_error = 'NaN' WHERE tip_id = :idle;
SELECT throws_ok($$SELECT pg_temp.write()$$, '22023', NULL, 'a tip without evidence that carries a number is refused');
SELECT pg_temp.stage(-1, 0.5, 1);
SELECT throws_ok(format($$SELECT pg_temp.write(jsonb_build_object('pad', repeat('x', 70000)))$$), '22023', NULL,
                 'fit parameters over 64 kB (a copy on every tip''s row) are refused');

-- A fit before later evidence (3)
SELECT pg_temp.stage(-1, 0.5, 1);
SELECT is(pg_temp.write(), 1, 'an honest fit is written');
SELECT results_eq(format($$SELECT p.fit_as_of, p.changed_tips, e.effect, e.misleading_probability
                      FROM ctxgraph.fit_previous('stig', '2026-12-01') AS p,
                           unnest(p.tip_id, p.effect, p.misleading_probability) AS e (tip_id, effect, misleading_probability)
                     WHERE e.tip_id = %s$$, :w),
                  $$VALUES ('2026-12-01'::timestamptz, '{}'::bigint[], -1::double precision, 0.99::double precision)$$,
                  'fit_previous hands over the stored fit: its instant, W''s figures, and no changed tip');
SELECT tests.make_judged_attempt('stig', 'fw-late', 'W-1', 1, ARRAY[:w]::bigint[], false, 'health_failure',
                                 '2026-12-02 10:00+00', true, 0.9);
-- The same evidence up to 2026-12-01 as the fit's, but W has one more attempt after it.
UPDATE ctxgraph.tip_effect_fits AS f SET evidence_version = fp.evidence_version
  FROM ctxgraph._tip_effects_fingerprint('stig') AS fp WHERE f.skill = 'stig';
UPDATE ctxgraph.tip_effects AS e SET evidence_version = s.evidence_version
  FROM ctxgraph.tip_stats AS s WHERE s.skill = e.skill AND s.tip_id = e.tip_id AND e.skill = 'stig';
SELECT results_eq($$SELECT current, tips_changed, attempts_after FROM ctxgraph.fit_state('stig', '2026-12-03')$$,
                  $$VALUES (false, 1::bigint, 1::bigint)$$,
                  'a fit as of before a later attempt is stale by that attempt''s tip, even with the same fingerprint');
SELECT is((SELECT changed_tips FROM ctxgraph.fit_previous('stig', '2026-12-03')), ARRAY[:w]::bigint[],
          'fit_previous names the tip retrieved after the fit''s instant as changed, the one tip fit_state counts');
UPDATE ctxgraph.tip_retrievals SET tip_followed_llm = false
 WHERE skill = 'stig' AND tip_id = :w AND run_id = 'fw-0';
SELECT is((SELECT changed_tips FROM ctxgraph.fit_previous('stig', '2026-12-01')), ARRAY[:w]::bigint[],
          'and a tip whose rows were rescored since the fit, at the fit''s own instant');
SELECT throws_ok($$SELECT * FROM ctxgraph.evict_tips('stig', '2026-12-03', false)$$, '55000', NULL,
                 'and a retiring evict_tips refuses it (55000)');
SELECT is((SELECT retired_at FROM ctxgraph.tips WHERE skill = 'stig' AND id = :w), NULL,
          'W is not retired on it');

SELECT * FROM finish();
ROLLBACK;
