-- TRUNCATE and the maintained levels. A TRUNCATE fires no INSERT/UPDATE/DELETE trigger, so the
-- levels (tip_stats, tip_attempt_stats, tip_rule_stats, tip_run_stats, rule_attempt_stats,
-- rule_stats) used to keep the figures of rows that no longer existed. Now a TRUNCATE of a skill's
-- log, through the parent, of one partition, or by CASCADE from attempts, runs or tips, leaves
-- every level equal to a from-scratch computation over what is left (the references of
-- tests/fixtures/maintained_references.sql), and the other skill's figures untouched.
BEGIN;
SELECT plan(18);
SELECT setseed(0.1912);

-- The world, through the write path: 8 stig tips and 4 cve tips over two rules each, 6 attempts
-- per rule retrieving 2 to 3 of its tips, every result recorded, half the rows judged.
CREATE TEMP TABLE world_tips AS
SELECT tests.make_tip(CASE WHEN n <= 8 THEN 'stig' ELSE 'cve' END, 'tr-rule-' || (n % 2), 'truncate tip ' || n) AS id,
       CASE WHEN n <= 8 THEN 'stig' ELSE 'cve' END AS skill, 'tr-rule-' || (n % 2) AS rule_id
  FROM generate_series(1, 12) AS n;
SELECT count(*) > 0 AS built
  FROM (SELECT tests.make_attempt_with_retrievals(
                   r.skill, 'tr-run-' || (g % 2), r.rule_id, g,
                   ARRAY(SELECT t.id FROM world_tips AS t WHERE t.skill = r.skill AND t.rule_id = r.rule_id
                          ORDER BY random() LIMIT 2 + (g % 2)),
                   g % 3 = 0, CASE WHEN g % 3 = 0 THEN NULL WHEN r.skill = 'stig' THEN
                                   (ARRAY['clean_failure', 'health_failure'])[1 + g % 2] END,
                   '2026-11-20 00:00+00'::timestamptz + g * interval '1 hour')
          FROM (SELECT DISTINCT skill, rule_id FROM world_tips) AS r, generate_series(1, 6) AS g
         ORDER BY r.skill, r.rule_id, g) AS made \gset
UPDATE ctxgraph.tip_retrievals SET tip_followed_llm = (id % 2 = 0), tip_followed_emb = 0.6,
                                   tip_followed_computed_at = '2026-11-29 00:00+00'
 WHERE id % 3 <> 0;

-- The comparison every case below makes: all three reference views, both skills.
CREATE TEMP VIEW level_drift AS
SELECT 'tips' AS what, count(*) AS rows
  FROM ((SELECT * FROM tests.maintained_tips EXCEPT SELECT * FROM tests.reference_tips)
        UNION ALL (SELECT * FROM tests.reference_tips EXCEPT SELECT * FROM tests.maintained_tips)) AS d
UNION ALL
SELECT 'pairs', count(*)
  FROM ((SELECT * FROM tests.maintained_pairs EXCEPT SELECT * FROM tests.reference_pairs)
        UNION ALL (SELECT * FROM tests.reference_pairs EXCEPT SELECT * FROM tests.maintained_pairs)) AS d
UNION ALL
SELECT 'levels', count(*)
  FROM ((SELECT * FROM tests.maintained_levels EXCEPT SELECT * FROM tests.reference_levels)
        UNION ALL (SELECT * FROM tests.reference_levels EXCEPT SELECT * FROM tests.maintained_levels)) AS d;

SELECT ok((SELECT count(*) FROM ctxgraph.tip_attempt_stats WHERE skill = 'stig') > 0
          AND (SELECT sum(attempts) FROM ctxgraph.rule_stats WHERE skill = 'stig') > 0,
          'the world has stig figures to go stale');
SELECT results_eq('SELECT what, rows FROM level_drift', $$VALUES ('tips', 0::bigint), ('pairs', 0), ('levels', 0)$$,
                  'before any TRUNCATE: every level = reference');
CREATE TEMP TABLE cve_before AS SELECT * FROM tests.maintained_levels WHERE figures LIKE 'cve %';
SELECT sum(evidence_version) AS stig_version FROM ctxgraph.tip_stats WHERE skill = 'stig' \gset

-- 1. One skill's partition (the CASCADE reaches retrieval_scores, which references the log).
SAVEPOINT world;
TRUNCATE stig.tip_retrievals CASCADE;
SELECT results_eq('SELECT what, rows FROM level_drift', $$VALUES ('tips', 0::bigint), ('pairs', 0), ('levels', 0)$$,
                  'TRUNCATE stig.tip_retrievals: every level = reference');
SELECT is((SELECT count(*) FROM ctxgraph.tip_attempt_stats WHERE skill = 'stig')
          + (SELECT count(*) FROM ctxgraph.rule_attempt_stats WHERE skill = 'stig')
          + (SELECT coalesce(sum(attempts), 0) FROM ctxgraph.rule_stats WHERE skill = 'stig')
          + (SELECT sum(retrievals + scored + runs) FROM ctxgraph.tip_stats WHERE skill = 'stig'),
          0::numeric, 'TRUNCATE stig.tip_retrievals: stig has no figures left');
SELECT set_eq($$SELECT * FROM tests.maintained_levels WHERE figures LIKE 'cve %'$$, 'SELECT * FROM cve_before',
              'TRUNCATE stig.tip_retrievals: cve''s figures are untouched');
SELECT ok((SELECT sum(evidence_version) FROM ctxgraph.tip_stats WHERE skill = 'stig') > :stig_version,
          'TRUNCATE stig.tip_retrievals: the tips'' evidence versions moved (a fit of the effects is stale)');
ROLLBACK TO SAVEPOINT world;
SELECT results_eq('SELECT what, rows FROM level_drift', $$VALUES ('tips', 0::bigint), ('pairs', 0), ('levels', 0)$$,
                  'rolled back: every level = reference again');

-- 2. The parent: every partition's trigger fires, each for its skill.
TRUNCATE ctxgraph.tip_retrievals CASCADE;
SELECT results_eq('SELECT what, rows FROM level_drift', $$VALUES ('tips', 0::bigint), ('pairs', 0), ('levels', 0)$$,
                  'TRUNCATE ctxgraph.tip_retrievals: every level = reference');
SELECT is((SELECT count(*) FROM ctxgraph.tip_attempt_stats) + (SELECT count(*) FROM ctxgraph.rule_attempt_stats),
          0::bigint, 'TRUNCATE ctxgraph.tip_retrievals: no pair or attempt figures are left');
ROLLBACK TO SAVEPOINT world;

-- 3. By CASCADE from the attempts (the log references them), of one skill and of all.
TRUNCATE cve.attempts CASCADE;
SELECT results_eq('SELECT what, rows FROM level_drift', $$VALUES ('tips', 0::bigint), ('pairs', 0), ('levels', 0)$$,
                  'TRUNCATE cve.attempts CASCADE: every level = reference');
ROLLBACK TO SAVEPOINT world;
TRUNCATE ctxgraph.attempts CASCADE;
SELECT results_eq('SELECT what, rows FROM level_drift', $$VALUES ('tips', 0::bigint), ('pairs', 0), ('levels', 0)$$,
                  'TRUNCATE ctxgraph.attempts CASCADE: every level = reference');
SELECT is((SELECT coalesce(sum(attempts), 0) FROM ctxgraph.rule_stats), 0::numeric,
          'TRUNCATE ctxgraph.attempts CASCADE: no rule counts an attempt');
ROLLBACK TO SAVEPOINT world;

-- 4. By CASCADE from the runs, and from the tips (which the levels reference too).
TRUNCATE stig.runs CASCADE;
SELECT results_eq('SELECT what, rows FROM level_drift', $$VALUES ('tips', 0::bigint), ('pairs', 0), ('levels', 0)$$,
                  'TRUNCATE stig.runs CASCADE: every level = reference');
ROLLBACK TO SAVEPOINT world;
TRUNCATE stig.tips CASCADE;
SELECT results_eq('SELECT what, rows FROM level_drift', $$VALUES ('tips', 0::bigint), ('pairs', 0), ('levels', 0)$$,
                  'TRUNCATE stig.tips CASCADE: every level = reference');
SELECT is((SELECT count(*) FROM ctxgraph.rule_attempt_stats WHERE skill = 'stig'), 0::bigint,
          'TRUNCATE stig.tips CASCADE: no stig attempt figures are left (rule_attempt_stats does not reference tips)');
ROLLBACK TO SAVEPOINT world;

-- 5. A truncated log takes new rows as usual, and a skill added later gets the trigger.
TRUNCATE stig.tip_retrievals CASCADE;
SELECT tests.make_attempt_with_retrievals('stig', 'tr-after', 'tr-rule-1', 1,
           ARRAY(SELECT id FROM world_tips WHERE skill = 'stig' AND rule_id = 'tr-rule-1' ORDER BY id LIMIT 2),
           true) AS after_attempt \gset
SELECT results_eq('SELECT what, rows FROM level_drift', $$VALUES ('tips', 0::bigint), ('pairs', 0), ('levels', 0)$$,
                  'after a TRUNCATE, new rows are kept by deltas: every level = reference');
SELECT lives_ok($$SELECT ctxgraph.add_skill('k9', 'binary', 'Test skill.')$$, 'a third skill is added');
SELECT tests.make_attempt_with_retrievals('k9', 'tr-k', 'K-1', 1, ARRAY[tests.make_tip('k9', 'K-1', 'K tip')], true) AS k_attempt \gset
TRUNCATE k9.tip_retrievals CASCADE;
SELECT results_eq('SELECT what, rows FROM level_drift', $$VALUES ('tips', 0::bigint), ('pairs', 0), ('levels', 0)$$,
                  'TRUNCATE k9.tip_retrievals (a skill added later): every level = reference');

SELECT * FROM finish();
ROLLBACK;
