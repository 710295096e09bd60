-- TRUNCATE and the maintained levels. A TRUNCATE fires no INSERT/UPDATE/DELETE trigger, so the
-- levels (tip_stats, tip_attempt_stats, tip_rule_stats, tip_run_stats, rule_attempt_stats,
-- rule_stats) used to keep the figures of rows that no longer existed. Now a TRUNCATE of a skill's
-- log, through the parent, of one partition, or by CASCADE from attempts, runs or tips, leaves
-- every level equal to a from-scratch computation over what is left (the references below are
-- those of 14-delta-maintenance.sql), and the other skill's figures untouched.
BEGIN;
SELECT plan(18);
SELECT setseed(0.1912);

CREATE TEMP VIEW reference_tips AS
WITH logged AS (
    SELECT r.skill, r.tip_id, count(*) AS retrievals, max(r.retrieved_at) AS last_retrieved_at
      FROM ctxgraph.tip_retrievals AS r GROUP BY r.skill, r.tip_id
),
scored AS (
    SELECT s.skill, s.tip_id, count(*) AS scored, count(DISTINCT s.attempt_key) AS attempts,
           sum(s.credit) AS outcome_sum, sum(s.credit * s.follow_weight) AS weighted_sum,
           count(s.followed) AS follow_known, count(*) FILTER (WHERE s.followed) AS followed,
           count(*) FILTER (WHERE s.followed AND s.harmful) AS harm
      FROM ctxgraph.scored_retrievals AS s GROUP BY s.skill, s.tip_id
)
SELECT t.skill, t.id AS tip_id, coalesce(l.retrievals, 0) AS retrievals, coalesce(s.scored, 0) AS scored,
       coalesce(s.attempts, 0) AS attempts, round(coalesce(s.outcome_sum, 0)::numeric, 10) AS outcome_sum,
       round(coalesce(s.weighted_sum, 0)::numeric, 10) AS weighted_sum, coalesce(s.follow_known, 0) AS follow_known,
       coalesce(s.followed, 0) AS followed, coalesce(s.harm, 0) AS harm, l.last_retrieved_at
  FROM ctxgraph.tips AS t
  LEFT JOIN logged AS l ON l.skill = t.skill AND l.tip_id = t.id
  LEFT JOIN scored AS s ON s.skill = t.skill AND s.tip_id = t.id;

CREATE TEMP VIEW maintained_tips AS
SELECT t.skill, t.id AS tip_id, coalesce(s.retrievals, 0) AS retrievals, coalesce(s.scored, 0) AS scored,
       coalesce(s.attempts, 0) AS attempts, round(coalesce(s.outcome_sum, 0)::numeric, 10) AS outcome_sum,
       round(coalesce(s.weighted_sum, 0)::numeric, 10) AS weighted_sum, coalesce(s.follow_known, 0) AS follow_known,
       coalesce(s.followed, 0) AS followed, coalesce(s.harm, 0) AS harm, s.last_retrieved_at
  FROM ctxgraph.tips AS t
  LEFT JOIN ctxgraph.tip_stats AS s ON s.skill = t.skill AND s.tip_id = t.id;

CREATE TEMP VIEW reference_pairs AS
SELECT s.skill, s.tip_id, s.attempt_key, min(s.rule_id) AS rule_id, count(*) AS scored,
       round(sum(s.credit)::numeric, 10) AS outcome_sum, round(sum(s.credit * s.follow_weight)::numeric, 10) AS weighted_sum,
       count(s.followed) AS follow_known, count(*) FILTER (WHERE s.followed) AS followed,
       count(*) FILTER (WHERE s.followed AND s.harmful) AS harm
  FROM ctxgraph.scored_retrievals AS s
 GROUP BY s.skill, s.tip_id, s.attempt_key;

CREATE TEMP VIEW maintained_pairs AS
SELECT a.skill, a.tip_id, a.attempt_key, a.rule_id, a.scored, round(a.outcome_sum::numeric, 10) AS outcome_sum,
       round(a.weighted_sum::numeric, 10) AS weighted_sum, a.follow_known, a.followed, a.harm
  FROM ctxgraph.tip_attempt_stats AS a;

-- The eviction levels, as text rows tagged by level so one comparison covers them all. A unit is
-- one (tip, attempt): its mean follow weight w, mean credit y and whether it broke the system h.
CREATE TEMP VIEW reference_levels AS
WITH units AS (
    SELECT s.skill, s.tip_id, s.attempt_key, min(s.rule_id) AS rule_id, min(s.run_id) AS run_id,
           avg(s.follow_weight) AS w, avg(s.credit) AS y, bool_or(s.harmful) AS h
      FROM ctxgraph.scored_retrievals AS s GROUP BY s.skill, s.tip_id, s.attempt_key
),
attempts AS (
    SELECT u.skill, u.attempt_key, min(u.rule_id) AS rule_id, count(*) AS units, sum(u.y) AS y_sum, bool_or(u.h) AS h
      FROM units AS u GROUP BY u.skill, u.attempt_key
)
SELECT 'tip_rule' AS level, concat_ws(' ', u.skill, u.tip_id, u.rule_id, count(*), round(sum(u.w)::numeric, 10),
                                      round(sum(u.w * u.y)::numeric, 10), round(sum(u.w * u.h::int)::numeric, 10)) AS figures
  FROM units AS u GROUP BY u.skill, u.tip_id, u.rule_id
UNION ALL
SELECT 'tip_runs', concat_ws(' ', t.skill, t.id, (SELECT count(DISTINCT u.run_id) FROM units AS u
                                                   WHERE u.skill = t.skill AND u.tip_id = t.id))
  FROM ctxgraph.tips AS t
UNION ALL
SELECT 'rule_attempt', concat_ws(' ', a.skill, a.attempt_key, a.rule_id, a.units, round(a.y_sum::numeric, 10), a.h)
  FROM attempts AS a
UNION ALL
SELECT 'rule', concat_ws(' ', a.skill, a.rule_id, count(*), round(sum(a.y_sum / a.units)::numeric, 10),
                         count(*) FILTER (WHERE a.h))
  FROM attempts AS a GROUP BY a.skill, a.rule_id;

CREATE TEMP VIEW maintained_levels AS
SELECT 'tip_rule' AS level, concat_ws(' ', r.skill, r.tip_id, r.rule_id, r.units, round(r.followed_n::numeric, 10),
                                      round(r.followed_sum::numeric, 10), round(r.harm_n::numeric, 10)) AS figures
  FROM ctxgraph.tip_rule_stats AS r
UNION ALL
SELECT 'tip_runs', concat_ws(' ', t.skill, t.id, coalesce(s.runs, 0))
  FROM ctxgraph.tips AS t LEFT JOIN ctxgraph.tip_stats AS s ON s.skill = t.skill AND s.tip_id = t.id
UNION ALL
SELECT 'rule_attempt', concat_ws(' ', a.skill, a.attempt_key, a.rule_id, a.units, round(a.outcome_sum::numeric, 10), a.harmful)
  FROM ctxgraph.rule_attempt_stats AS a
UNION ALL
-- A rule whose attempts are all gone keeps a row of zeros; the reference has no row for it.
SELECT 'rule', concat_ws(' ', r.skill, r.rule_id, r.attempts, round(r.outcome_sum::numeric, 10), r.harmful_attempts)
  FROM ctxgraph.rule_stats AS r WHERE r.attempts > 0;

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
  FROM ((SELECT * FROM maintained_tips EXCEPT SELECT * FROM reference_tips)
        UNION ALL (SELECT * FROM reference_tips EXCEPT SELECT * FROM maintained_tips)) AS d
UNION ALL
SELECT 'pairs', count(*)
  FROM ((SELECT * FROM maintained_pairs EXCEPT SELECT * FROM reference_pairs)
        UNION ALL (SELECT * FROM reference_pairs EXCEPT SELECT * FROM maintained_pairs)) AS d
UNION ALL
SELECT 'levels', count(*)
  FROM ((SELECT * FROM maintained_levels EXCEPT SELECT * FROM reference_levels)
        UNION ALL (SELECT * FROM reference_levels EXCEPT SELECT * FROM maintained_levels)) AS d;

SELECT ok((SELECT count(*) FROM ctxgraph.tip_attempt_stats WHERE skill = 'stig') > 0
          AND (SELECT sum(attempts) FROM ctxgraph.rule_stats WHERE skill = 'stig') > 0,
          'the world has stig figures to go stale');
SELECT results_eq('SELECT what, rows FROM level_drift', $$VALUES ('tips', 0::bigint), ('pairs', 0), ('levels', 0)$$,
                  'before any TRUNCATE: every level = reference');
CREATE TEMP TABLE cve_before AS SELECT * FROM maintained_levels WHERE figures LIKE 'cve %';
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
SELECT set_eq($$SELECT * FROM maintained_levels WHERE figures LIKE 'cve %'$$, 'SELECT * FROM cve_before',
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
