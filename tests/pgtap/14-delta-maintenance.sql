-- Delta maintenance: tip_stats, tip_attempt_stats and the levels eviction reads (tip_rule_stats,
-- tip_stats.runs, rule_attempt_stats, rule_stats) are moved by the rows each statement changes,
-- never re-aggregated from a tip's history. After every kind of write, on seeded random data, all
-- must equal a from-scratch computation (tests/fixtures/maintained_references.sql) over scored_retrievals and the raw log (the
-- sums up to float rounding: they move by differences; 10 decimals).
BEGIN;
SELECT plan(50);
SELECT setseed(0.2026);

-- The references: tests/fixtures/maintained_references.sql.

-- The world: 12 tips over 3 rules of stig and 4 tips of cve, 12 attempts per rule.
CREATE TEMP TABLE world_tips AS
SELECT tests.make_tip(CASE WHEN n <= 12 THEN 'stig' ELSE 'cve' END, 'dm-rule-' || (n % 3), 'delta tip ' || n) AS id,
       CASE WHEN n <= 12 THEN 'stig' ELSE 'cve' END AS skill, 'dm-rule-' || (n % 3) AS rule_id
  FROM generate_series(1, 16) AS n;
CREATE TEMP TABLE world_attempts AS
SELECT tests.make_attempt(w.skill, 'dm-run', w.rule_id, w.number,
                          '2026-11-20 00:00+00'::timestamptz + w.number * interval '1 hour') AS id,
       w.skill, w.rule_id
  FROM (SELECT skill, rule_id, row_number() OVER (PARTITION BY skill, rule_id ORDER BY g)::integer AS number
          FROM (SELECT DISTINCT skill, rule_id FROM world_tips) AS r, generate_series(1, 12) AS g) AS w;

-- 1. Logged in batches: every attempt retrieves 3 to 5 tips of its rule, unlinked, no outcome;
--    plus 30 legacy rows that arrive with their outcome and no attempt.
INSERT INTO ctxgraph.tip_retrievals (skill, run_id, tip_id, rule_id, rank, similarity_score, retrieved_at)
SELECT a.skill, 'dm-run', t.id, a.rule_id, row_number() OVER (PARTITION BY a.id ORDER BY t.id), 0.5,
       '2026-11-20 00:00+00'::timestamptz + (random() * 200) * interval '1 hour'
  FROM world_attempts AS a JOIN world_tips AS t ON t.skill = a.skill AND t.rule_id = a.rule_id
 WHERE random() < 0.85;
INSERT INTO ctxgraph.tip_retrievals (skill, run_id, tip_id, rule_id, rank, outcome_value, outcome_confidence, retrieved_at,
                                     tip_followed_llm, tip_followed_emb)
SELECT t.skill, 'dm-run', t.id, t.rule_id, 1, (ARRAY[1.0, 0.5, 0.0, -0.2])[1 + floor(random() * 4)::int],
       CASE WHEN random() < 0.3 THEN NULL ELSE round(random()::numeric, 2)::float8 END,
       '2026-11-10 00:00+00'::timestamptz + (random() * 100) * interval '1 hour',
       (ARRAY[true, false, NULL])[1 + floor(random() * 3)::int], CASE WHEN random() < 0.2 THEN 'NaN' ELSE random() END
  FROM world_tips AS t, generate_series(1, 2) AS g
 WHERE random() < 0.95;
SELECT set_eq('SELECT * FROM tests.maintained_tips', 'SELECT * FROM tests.reference_tips', 'after logging: tips = reference');
SELECT set_eq('SELECT * FROM tests.maintained_pairs', 'SELECT * FROM tests.reference_pairs', 'after logging: pairs = reference');
SELECT set_eq('SELECT * FROM tests.maintained_levels', 'SELECT * FROM tests.reference_levels', 'after logging: eviction levels = reference');

-- 2. Linked to their attempts through the write path, one attempt at a time.
DO $$
DECLARE
    a record;
BEGIN
    FOR a IN SELECT * FROM world_attempts ORDER BY id LOOP
        PERFORM ctxgraph.update_retrieval_attempt_ids(a.skill, ARRAY(
                    SELECT r.id FROM ctxgraph.tip_retrievals AS r
                     WHERE r.skill = a.skill AND r.rule_id = a.rule_id AND r.attempt_id IS NULL
                       AND r.outcome_value IS NULL AND r.run_id = 'dm-run'
                     ORDER BY r.id LIMIT 4), a.id);
    END LOOP;
END
$$;
SELECT set_eq('SELECT * FROM tests.maintained_tips', 'SELECT * FROM tests.reference_tips', 'after linking: tips = reference');
SELECT set_eq('SELECT * FROM tests.maintained_pairs', 'SELECT * FROM tests.reference_pairs', 'after linking: pairs = reference');
SELECT set_eq('SELECT * FROM tests.maintained_levels', 'SELECT * FROM tests.reference_levels', 'after linking: eviction levels = reference');

-- 3. Outcomes recorded: passes, clean failures and health failures.
SELECT count(ctxgraph.record_outcome(a.skill, a.id, o.passed, o.mode))
  FROM world_attempts AS a
 CROSS JOIN LATERAL (SELECT x < 0.5 AS passed,
                            CASE WHEN x < 0.5 THEN NULL WHEN a.skill = 'cve' THEN NULL
                                 WHEN x < 0.8 THEN 'clean_failure' ELSE 'health_failure' END AS mode
                       FROM (SELECT random() + a.id * 0 AS x) AS r) AS o \gset recorded_
SELECT set_eq('SELECT * FROM tests.maintained_tips', 'SELECT * FROM tests.reference_tips', 'after record_outcome: tips = reference');
SELECT set_eq('SELECT * FROM tests.maintained_pairs', 'SELECT * FROM tests.reference_pairs', 'after record_outcome: pairs = reference');
SELECT set_eq('SELECT * FROM tests.maintained_levels', 'SELECT * FROM tests.reference_levels', 'after record_outcome: eviction levels = reference');
SELECT ok((SELECT count(*) FROM ctxgraph.tip_attempt_stats WHERE attempt_key > 0) > 50
          AND (SELECT count(*) FROM ctxgraph.tip_attempt_stats WHERE attempt_key < 0) > 20,
          'the world has linked pairs and unlinked legacy pairs');

-- 4. The scorer's write-back: judge verdicts, cosines and probabilities, in one statement per column.
--    One-row pairs move by each row's change of follow branch; pairs of several rows are recomputed:
--    the world has both, harmful or not.
SELECT ok((SELECT count(*) FILTER (WHERE scored = 1 AND harmful) > 0 AND count(*) FILTER (WHERE scored = 1 AND NOT harmful) > 0
                  AND count(*) FILTER (WHERE scored > 1) > 0
             FROM ctxgraph.tip_attempt_stats),
          'the write-back meets one-row pairs (harmful and not) and pairs of several rows');
UPDATE ctxgraph.tip_retrievals SET tip_followed_llm = random() < 0.5 WHERE run_id = 'dm-run' AND random() < 0.4;
UPDATE ctxgraph.tip_retrievals SET tip_followed_emb = random() WHERE run_id = 'dm-run' AND random() < 0.6;
UPDATE ctxgraph.tip_retrievals SET follow_probability = random() WHERE run_id = 'dm-run' AND random() < 0.5;
SELECT set_eq('SELECT * FROM tests.maintained_tips', 'SELECT * FROM tests.reference_tips', 'after the scorer''s write-back: tips = reference');
SELECT set_eq('SELECT * FROM tests.maintained_pairs', 'SELECT * FROM tests.reference_pairs', 'after the scorer''s write-back: pairs = reference');
SELECT set_eq('SELECT * FROM tests.maintained_levels', 'SELECT * FROM tests.reference_levels', 'after the scorer''s write-back: eviction levels = reference');

-- 4b. A write-back of one-row pairs only never recomputes a pair from the log: it goes through
--     _tip_stats_follow_apply alone, not _tip_stats_apply (counted by track_functions).
SET LOCAL track_functions = 'pl';
CREATE TEMP TABLE calls_before AS
SELECT f.funcname, f.calls FROM pg_catalog.pg_stat_xact_user_functions AS f
 WHERE f.schemaname = 'ctxgraph' AND f.funcname IN ('_tip_stats_apply', '_tip_stats_follow_apply');
UPDATE ctxgraph.tip_retrievals AS r
   SET tip_followed_llm = NOT coalesce(r.tip_followed_llm, false), follow_probability = random()
  FROM ctxgraph.tip_attempt_stats AS a
 WHERE r.run_id = 'dm-run' AND a.skill = r.skill AND a.tip_id = r.tip_id AND a.attempt_key = coalesce(r.attempt_id, -r.id)
   AND a.scored = 1;
SELECT is((SELECT coalesce(sum(f.calls), 0) FROM pg_catalog.pg_stat_xact_user_functions AS f
            WHERE f.schemaname = 'ctxgraph' AND f.funcname = '_tip_stats_apply')
          - (SELECT coalesce(sum(c.calls), 0) FROM calls_before AS c WHERE c.funcname = '_tip_stats_apply'),
          0::numeric, 'a write-back of one-row pairs recomputes no pair (_tip_stats_apply not called)');
SELECT cmp_ok((SELECT coalesce(sum(f.calls), 0) FROM pg_catalog.pg_stat_xact_user_functions AS f
                WHERE f.schemaname = 'ctxgraph' AND f.funcname = '_tip_stats_follow_apply')
              - (SELECT coalesce(sum(c.calls), 0) FROM calls_before AS c WHERE c.funcname = '_tip_stats_follow_apply'),
              '>', 0::numeric, 'it moves them by difference (_tip_stats_follow_apply)');
SELECT set_eq('SELECT * FROM tests.maintained_tips', 'SELECT * FROM tests.reference_tips', 'after a write-back of one-row pairs: tips = reference');
SELECT set_eq('SELECT * FROM tests.maintained_pairs', 'SELECT * FROM tests.reference_pairs', 'after a write-back of one-row pairs: pairs = reference');
SELECT set_eq('SELECT * FROM tests.maintained_levels', 'SELECT * FROM tests.reference_levels', 'after a write-back of one-row pairs: eviction levels = reference');
SET LOCAL track_functions = 'none';

-- 4c. One statement that both flips verdicts (moved by difference) and re-links other rows of the
--     same pairs (recomputed): a pair may gain or lose rows while its follow figures move.
UPDATE ctxgraph.tip_retrievals AS r
   SET tip_followed_llm = CASE WHEN g.flip THEN NOT coalesce(r.tip_followed_llm, false) ELSE r.tip_followed_llm END,
       attempt_id = CASE WHEN g.flip THEN r.attempt_id
                         ELSE (SELECT a.id FROM world_attempts AS a WHERE a.skill = r.skill AND a.rule_id = r.rule_id
                                ORDER BY md5(a.id::text || r.id::text || 'c') LIMIT 1) END
  FROM (SELECT l.id, random() < 0.7 AS flip FROM ctxgraph.tip_retrievals AS l
         WHERE l.run_id = 'dm-run' AND l.attempt_id IS NOT NULL) AS g
 WHERE r.id = g.id AND r.run_id = 'dm-run';
SELECT set_eq('SELECT * FROM tests.maintained_tips', 'SELECT * FROM tests.reference_tips', 'after verdicts flipped and rows re-linked in one statement: tips = reference');
SELECT set_eq('SELECT * FROM tests.maintained_pairs', 'SELECT * FROM tests.reference_pairs', 'after verdicts flipped and rows re-linked in one statement: pairs = reference');
SELECT set_eq('SELECT * FROM tests.maintained_levels', 'SELECT * FROM tests.reference_levels', 'after verdicts flipped and rows re-linked in one statement: eviction levels = reference');

-- 5. Failure modes corrected on the attempts themselves (harm moves for every tip of the attempt).
UPDATE ctxgraph.attempts SET failure_mode = CASE failure_mode WHEN 'clean_failure' THEN 'health_failure' ELSE 'clean_failure' END
 WHERE skill = 'stig' AND run_id = 'dm-run' AND passed IS FALSE AND random() < 0.6;
SELECT set_eq('SELECT * FROM tests.maintained_tips', 'SELECT * FROM tests.reference_tips', 'after failure-mode changes: tips = reference');
SELECT set_eq('SELECT * FROM tests.maintained_pairs', 'SELECT * FROM tests.reference_pairs', 'after failure-mode changes: pairs = reference');
SELECT set_eq('SELECT * FROM tests.maintained_levels', 'SELECT * FROM tests.reference_levels', 'after failure-mode changes: eviction levels = reference');

-- 6. Rows moved to another tip of the same skill, and retrieved_at rewritten (the latest moves).
UPDATE ctxgraph.tip_retrievals AS r
   SET tip_id = (SELECT t.id FROM world_tips AS t WHERE t.skill = r.skill AND t.id <> r.tip_id
                  ORDER BY md5(t.id::text || r.id::text) LIMIT 1)
 WHERE r.run_id = 'dm-run' AND random() < 0.15;
UPDATE ctxgraph.tip_retrievals SET retrieved_at = retrieved_at - interval '300 hours'
 WHERE run_id = 'dm-run' AND random() < 0.3;
SELECT set_eq('SELECT * FROM tests.maintained_tips', 'SELECT * FROM tests.reference_tips', 'after moving rows and rewriting retrieved_at: tips = reference');
SELECT set_eq('SELECT * FROM tests.maintained_pairs', 'SELECT * FROM tests.reference_pairs', 'after moving rows and rewriting retrieved_at: pairs = reference');
SELECT set_eq('SELECT * FROM tests.maintained_levels', 'SELECT * FROM tests.reference_levels', 'after moving rows and rewriting retrieved_at: eviction levels = reference');

-- 7. Rows re-linked to another attempt of the same rule (pairs split and merge), and unlinked.
UPDATE ctxgraph.tip_retrievals AS r
   SET attempt_id = (SELECT a.id FROM world_attempts AS a WHERE a.skill = r.skill AND a.rule_id = r.rule_id
                      ORDER BY md5(a.id::text || r.id::text) LIMIT 1)
 WHERE r.run_id = 'dm-run' AND r.attempt_id IS NOT NULL AND random() < 0.2;
UPDATE ctxgraph.tip_retrievals SET attempt_id = NULL WHERE run_id = 'dm-run' AND attempt_id IS NOT NULL AND random() < 0.1;
SELECT set_eq('SELECT * FROM tests.maintained_tips', 'SELECT * FROM tests.reference_tips', 'after re-linking and unlinking: tips = reference');
SELECT set_eq('SELECT * FROM tests.maintained_pairs', 'SELECT * FROM tests.reference_pairs', 'after re-linking and unlinking: pairs = reference');
SELECT set_eq('SELECT * FROM tests.maintained_levels', 'SELECT * FROM tests.reference_levels', 'after re-linking and unlinking: eviction levels = reference');

-- 8. Outcomes withdrawn, then deletes: random rows and every tip's latest row.
UPDATE ctxgraph.tip_retrievals SET outcome_value = NULL, outcome_confidence = NULL WHERE run_id = 'dm-run' AND random() < 0.1;
DELETE FROM ctxgraph.tip_retrievals WHERE run_id = 'dm-run' AND random() < 0.15;
DELETE FROM ctxgraph.tip_retrievals AS r
 WHERE r.run_id = 'dm-run'
   AND r.retrieved_at = (SELECT max(l.retrieved_at) FROM ctxgraph.tip_retrievals AS l WHERE l.skill = r.skill AND l.tip_id = r.tip_id);
SELECT set_eq('SELECT * FROM tests.maintained_tips', 'SELECT * FROM tests.reference_tips', 'after withdrawals and deletes: tips = reference');
SELECT set_eq('SELECT * FROM tests.maintained_pairs', 'SELECT * FROM tests.reference_pairs', 'after withdrawals and deletes: pairs = reference');
SELECT set_eq('SELECT * FROM tests.maintained_levels', 'SELECT * FROM tests.reference_levels', 'after withdrawals and deletes: eviction levels = reference');

-- 9. Straight into the partition (its own statement trigger), and a no-op UPDATE that must not move anything.
INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, outcome_value, attempt_id, retrieved_at, tip_followed_llm)
SELECT 'dm-run', t.id, t.rule_id, 9, 0.5, (SELECT a.id FROM world_attempts AS a WHERE a.skill = 'stig' AND a.rule_id = t.rule_id
                                           ORDER BY a.id LIMIT 1), '2027-01-01 00:00+00', true
  FROM world_tips AS t WHERE t.skill = 'stig';
CREATE TEMP TABLE before_noop AS SELECT * FROM ctxgraph.tip_stats;
UPDATE stig.tip_retrievals SET similarity_score = similarity_score WHERE run_id = 'dm-run';
SELECT set_eq('SELECT * FROM tests.maintained_tips', 'SELECT * FROM tests.reference_tips', 'after inserts into stig.tip_retrievals: tips = reference');
SELECT set_eq('SELECT * FROM tests.maintained_pairs', 'SELECT * FROM tests.reference_pairs', 'after inserts into stig.tip_retrievals: pairs = reference');
SELECT set_eq('SELECT * FROM tests.maintained_levels', 'SELECT * FROM tests.reference_levels', 'after inserts into stig.tip_retrievals: eviction levels = reference');
SELECT set_eq('SELECT * FROM ctxgraph.tip_stats', 'SELECT * FROM before_noop',
              'an UPDATE that changes no aggregated column leaves tip_stats untouched (refreshed_at too)');

-- 10. A follow.* parameter changed: every row re-weighed, both levels rebuilt.
UPDATE ctxgraph.parameters SET value = 0.25 WHERE name = 'follow.weight.judge_ignored';
SELECT set_eq('SELECT * FROM tests.maintained_tips', 'SELECT * FROM tests.reference_tips', 'after a parameter change: tips = reference');
SELECT set_eq('SELECT * FROM tests.maintained_pairs', 'SELECT * FROM tests.reference_pairs', 'after a parameter change: pairs = reference');
SELECT set_eq('SELECT * FROM tests.maintained_levels', 'SELECT * FROM tests.reference_levels', 'after a parameter change: eviction levels = reference');

-- 11. A tip deleted: its stats and pairs go with it; a from-scratch rebuild changes nothing.
DELETE FROM ctxgraph.tip_retrievals WHERE skill = 'cve' AND tip_id = (SELECT max(id) FROM world_tips WHERE skill = 'cve');
DELETE FROM ctxgraph.tips WHERE skill = 'cve' AND id = (SELECT max(id) FROM world_tips WHERE skill = 'cve');
SELECT is_empty($$SELECT 1 FROM ctxgraph.tip_attempt_stats AS a
                   WHERE NOT EXISTS (SELECT 1 FROM ctxgraph.tips AS t WHERE t.skill = a.skill AND t.id = a.tip_id)$$,
                'no pair row outlives its tip');
CREATE TEMP TABLE before_rebuild AS SELECT * FROM tests.maintained_tips;
CREATE TEMP TABLE pairs_before_rebuild AS SELECT * FROM tests.maintained_pairs;
CREATE TEMP TABLE levels_before_rebuild AS SELECT * FROM tests.maintained_levels;
SELECT ctxgraph.refresh_tip_stats() AS rebuilt \gset
SELECT set_eq('SELECT * FROM tests.maintained_tips', 'SELECT * FROM before_rebuild', 'refresh_tip_stats() changes no tip''s figures');
SELECT set_eq('SELECT * FROM tests.maintained_pairs', 'SELECT * FROM pairs_before_rebuild', 'refresh_tip_stats() changes no pair''s figures');
SELECT set_eq('SELECT * FROM tests.maintained_levels', 'SELECT * FROM levels_before_rebuild', 'refresh_tip_stats() changes no eviction level''s figures');
-- A whole skill's rebuild empties and refills its level partitions, then plans its own later
-- statements (and leaves every reader planning) on them: it analyses them, so their row counts in
-- pg_class are the rows they hold, not what autovacuum saw before (an empty partition: 0).
SELECT is_empty($$SELECT c.oid::regclass::text, c.reltuples::bigint AS counted, h.rows_held
                    FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
                   CROSS JOIN LATERAL (SELECT (xpath('/row/n/text()',
                                                     query_to_xml(format('SELECT count(*) AS n FROM %s', c.oid::regclass),
                                                                  false, true, '')))[1]::text::bigint AS rows_held) AS h
                   WHERE n.nspname IN ('stig', 'cve')
                     AND c.relname IN ('tip_stats', 'tip_attempt_stats', 'tip_rule_stats', 'tip_run_stats',
                                       'rule_attempt_stats', 'rule_stats')
                     AND c.reltuples::bigint <> h.rows_held$$,
                'refresh_tip_stats() leaves every level partition it rebuilt analysed: pg_class counts its rows');
-- 12. One statement that gives outcomes to many attempts (a bulk load of a long log): the attempt
--     locks are bounded (a fixed set of lock slots per skill, not one per attempt), so the shared
--     lock table cannot overflow (53200) however many attempts one transaction touches.
CREATE TEMP TABLE many_attempts AS
SELECT tests.make_attempt('stig', 'dm-many', 'dm-rule-' || (g % 3), g / 3 + 1,
                          '2026-12-01 00:00+00'::timestamptz + g * interval '1 minute') AS id, 'dm-rule-' || (g % 3) AS rule_id
  FROM generate_series(0, 899) AS g;
INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, outcome_value, attempt_id, retrieved_at, tip_followed_llm)
SELECT 'dm-many', t.id, a.rule_id, 1, 1.0, a.id, '2026-12-01 00:00+00', true
  FROM many_attempts AS a
  JOIN LATERAL (SELECT w.id FROM world_tips AS w WHERE w.skill = 'stig' AND w.rule_id = a.rule_id ORDER BY w.id LIMIT 1) AS t ON true;
SELECT cmp_ok((SELECT count(*) FROM pg_catalog.pg_locks WHERE pid = pg_catalog.pg_backend_pid() AND locktype = 'advisory'),
              '<=', 300::bigint, 'outcomes for 900 attempts in one transaction hold a bounded number of advisory locks');
SELECT set_eq('SELECT * FROM tests.maintained_pairs', 'SELECT * FROM tests.reference_pairs', 'after outcomes for 900 attempts: pairs = reference');
SELECT set_eq('SELECT * FROM tests.maintained_levels', 'SELECT * FROM tests.reference_levels', 'after outcomes for 900 attempts: eviction levels = reference');

SELECT ok((SELECT count(*) FROM ctxgraph.tip_retrievals WHERE run_id = 'dm-run') > 120,
          'the world kept enough rows for the comparisons to mean something');

SELECT * FROM finish();
ROLLBACK;
