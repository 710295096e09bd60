-- The bulk ingest: ctxgraph.ingest_staging and ctxgraph.ingest_run_log. One run log loaded in bulk
-- into one skill and replayed through the four per-call functions into another leaves the same
-- runs, attempts, retrievals and tip_stats; every error of the bulk path carries the per-call
-- SQLSTATE and names its line, the earliest bad line wins, and a refused log writes nothing; the
-- writer may run it. The log is JSON turned into staging rows by tests.stage_log (tip bodies stand
-- for the skill's tip ids); tests.replay_log is the loader's --per-call path in SQL.
BEGIN;
SELECT plan(41);

-- ---------------------------------------------------------------------------------------------
-- Fixtures: two graded skills with the same four tips, and one log.
-- ---------------------------------------------------------------------------------------------
SELECT ctxgraph.add_skill('ib', 'graded') AS ib, ctxgraph.add_skill('ic', 'graded') AS ic \gset
SELECT count(tests.make_tip(s, r, b)) AS tips
  FROM (VALUES ('V-1', 'A'), ('V-1', 'B'), ('V-1', 'C'), ('V-2', 'D')) AS t (r, b), (VALUES ('ib'), ('ic')) AS k (s) \gset

-- Line 1 ends a run no line has created yet (nothing to end); lines 4 and 5 wait for the same
-- attempt; line 7 is never followed by its attempt; line 8 retrieved nothing; line 9 is an attempt
-- without retrievals; run r2 has a retrieval only.
\set log '[{"line": 1, "kind": "run_end", "run_id": "r1", "ended_at": "2026-05-01 09:00+00"}, {"line": 2, "kind": "retrieval", "run_id": "r1", "rule_id": "V-1", "attempt_number": 1, "retrieved_at": "2026-05-01 10:00+00", "tip_bodies": ["A", "B"], "scores": [0.9, 0.8]}, {"line": 3, "kind": "attempt", "run_id": "r1", "rule_id": "V-1", "attempt_number": 1, "started_at": "2026-05-01 10:01+00", "ended_at": "2026-05-01 10:02+00", "passed": false, "failure_mode": "clean_failure", "approach": "sed the file"}, {"line": 4, "kind": "retrieval", "run_id": "r1", "rule_id": "V-1", "attempt_number": 2, "retrieved_at": "2026-05-01 10:03+00", "tip_bodies": ["B", "C"], "scores": [0.7, null]}, {"line": 5, "kind": "retrieval", "run_id": "r1", "rule_id": "V-1", "attempt_number": 2, "retrieved_at": "2026-05-01 10:03:30+00", "tip_bodies": ["A"], "scores": [0.6]}, {"line": 6, "kind": "attempt", "run_id": "r1", "rule_id": "V-1", "attempt_number": 2, "started_at": "2026-05-01 10:04+00", "ended_at": "2026-05-01 10:05+00", "passed": true}, {"line": 7, "kind": "retrieval", "run_id": "r1", "rule_id": "V-2", "attempt_number": 1, "retrieved_at": "2026-05-01 10:06+00", "tip_bodies": ["D"], "scores": [0.5]}, {"line": 8, "kind": "retrieval", "run_id": "r1", "rule_id": "V-2", "attempt_number": 1, "retrieved_at": "2026-05-01 10:07+00", "tip_bodies": [], "scores": []}, {"line": 9, "kind": "attempt", "run_id": "r1", "rule_id": "V-3", "attempt_number": 1, "passed": false, "failure_mode": "health_failure"}, {"line": 10, "kind": "run_end", "run_id": "r1", "ended_at": "2026-05-01 11:00+00"}, {"line": 11, "kind": "retrieval", "run_id": "r2", "rule_id": "V-1", "attempt_number": 1, "retrieved_at": "2026-05-02 08:00+00", "tip_bodies": ["C"], "scores": [0.4]}]'

-- ---------------------------------------------------------------------------------------------
-- The same log both ways (9)
-- ---------------------------------------------------------------------------------------------
SELECT results_eq($$SELECT * FROM tests.ingest_log('ib', $$ || quote_literal(:'log') || $$)$$,
                  $$VALUES ('r1', 3, 6), ('r2', 0, 1)$$,
                  'ingest_run_log returns attempts and retrievals per run, in the order the runs appear');
SELECT is((SELECT count(*) FROM pg_temp.ctxgraph_run_log), 0::bigint, 'ingest_run_log empties the staging table');
SELECT tests.stage_log('ic', :'log') AS staged \gset
SELECT lives_ok($$SELECT tests.replay_log('ic')$$, 'the per-call replay loads the same log');

SELECT set_eq($$SELECT * FROM tests.log_state('ib') WHERE part = 'run'$$,
              $$SELECT * FROM tests.log_state('ic') WHERE part = 'run'$$, 'runs: the same starts and ends both ways');
SELECT set_eq($$SELECT * FROM tests.log_state('ib') WHERE part = 'attempt'$$,
              $$SELECT * FROM tests.log_state('ic') WHERE part = 'attempt'$$, 'attempts: the same rows and results both ways');
SELECT bag_eq($$SELECT * FROM tests.log_state('ib') WHERE part = 'retrieval'$$,
              $$SELECT * FROM tests.log_state('ic') WHERE part = 'retrieval'$$,
              'tip_retrievals (ids aside): the same rows, links and outcomes both ways');
SELECT set_eq($$SELECT * FROM tests.log_state('ib') WHERE part = 'tip_stats'$$,
              $$SELECT * FROM tests.log_state('ic') WHERE part = 'tip_stats'$$, 'tip_stats: the same aggregates both ways');
SELECT is((SELECT count(*) FROM tests.log_state('ib')), 16::bigint,
          'the comparison covers 2 runs, 3 attempts, 7 retrievals and 4 tips'' stats (16 rows)');
SELECT results_eq($$SELECT t.body FROM ib.tip_retrievals AS r JOIN ib.tips AS t ON t.id = r.tip_id ORDER BY r.id$$,
                  $$VALUES ('A'), ('B'), ('B'), ('C'), ('A'), ('D'), ('C')$$,
                  'retrieval ids follow line and rank order, as the replay draws them');

-- ---------------------------------------------------------------------------------------------
-- What the bulk path wrote, read by eye (4)
-- ---------------------------------------------------------------------------------------------
SELECT results_eq(
    $$SELECT t.body, a.attempt_number, r.outcome_value, r.outcome_confidence
        FROM ib.tip_retrievals AS r JOIN ib.tips AS t ON t.id = r.tip_id LEFT JOIN ib.attempts AS a ON a.id = r.attempt_id
       ORDER BY r.id$$,
    $$VALUES ('A', 1, 0.0::float8, 1.0::float8), ('B', 1, 0.0, 1.0), ('B', 2, 0.8, 1.0), ('C', 2, 0.8, 1.0),
             ('A', 2, 0.8, 1.0), ('D', NULL, NULL, NULL), ('C', NULL, NULL, NULL)$$,
    'lines 2, 4 and 5 are linked to the attempt line after them and carry its graded outcome; 7 and 11 are not');
SELECT results_eq($$SELECT id, started_at, ended_at FROM ib.runs ORDER BY id$$,
                  $$VALUES ('r1', '2026-05-01 10:00+00'::timestamptz, '2026-05-01 11:00+00'::timestamptz),
                           ('r2', '2026-05-02 08:00+00', NULL)$$,
                  'a run starts at its first written line; only the run_end line after it ends it');
SELECT results_eq($$SELECT rule_id, attempt_number, passed, failure_mode FROM ib.attempts ORDER BY id$$,
                  $$VALUES ('V-1', 1, false, 'clean_failure'), ('V-1', 2, true, NULL), ('V-3', 1, false, 'health_failure')$$,
                  'attempts are saved with their results, in line order');
SELECT is((SELECT retrievals || '/' || attempts || '/' || scored FROM ib.tip_stats AS s JOIN ib.tips AS t ON t.id = s.tip_id
            WHERE t.body = 'A'), '2/2/2', 'tip A: two retrievals over two attempts, both scored');

-- ---------------------------------------------------------------------------------------------
-- Errors: the per-call SQLSTATE, the line named (17)
-- ---------------------------------------------------------------------------------------------
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ib', '[{"line": 4, "kind": "retrieval", "run_id": "r3", "rule_id": "V-1", "attempt_number": 1, "tip_bodies": ["A"], "scores": [0.5]}]')$$,
                 '22004', 'ctxgraph: run log line 4: log_retrievals needs run_id, rule_id, tip_ids, similarity_scores and retrieved_at',
                 'a retrieval line without retrieved_at: 22004');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ib', '[{"line": 4, "kind": "retrieval", "run_id": " ", "rule_id": "V-1", "attempt_number": 1, "retrieved_at": "2026-05-03 10:00+00", "tip_bodies": ["A"], "scores": [0.5]}]')$$,
                 '22023', 'ctxgraph: run log line 4: run_id and rule_id must not be empty', 'an empty run_id: 22023');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ib', '[{"line": 5, "kind": "retrieval", "run_id": "r3", "rule_id": "V-1", "attempt_number": 1, "retrieved_at": "2026-05-03 10:00+00", "tip_bodies": ["A", "B"], "scores": [0.5]}]')$$,
                 '22023', 'ctxgraph: run log line 5: 2 tip ids but 1 similarity scores', 'mismatched arrays: 22023');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ib', '[{"line": 6, "kind": "retrieval", "run_id": "r3", "rule_id": "V-1", "attempt_number": 1, "retrieved_at": "2026-05-03 10:00+00", "tip_bodies": ["A", "A"], "scores": [0.5, 0.4]}]')$$,
                 '22023', 'ctxgraph: run log line 6: a tip appears twice in one retrieval batch', 'a tip twice in one batch: 22023');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ib', '[{"line": 7, "kind": "retrieval", "run_id": "r3", "rule_id": "V-1", "attempt_number": 1, "retrieved_at": "2026-05-03 10:00+00", "tip_ids": [-7, -3], "scores": [0.5, 0.4]}]')$$,
                 '23503', 'ctxgraph: run log line 7: no ib tip with id -7, -3', 'unknown tips: 23503, listed as log_retrievals lists them');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ib', '[{"line": 8, "kind": "attempt", "run_id": "r3", "rule_id": "V-1", "passed": true}]')$$,
                 '22004', 'ctxgraph: run log line 8: save_attempt needs run_id, rule_id and attempt_number',
                 'an attempt line without attempt_number: 22004');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ib', '[{"line": 8, "kind": "attempt", "run_id": "r3", "rule_id": "V-1", "attempt_number": 0, "passed": true}]')$$,
                 '22023', 'ctxgraph: run log line 8: attempt_number must be 1 or more, got 0', 'attempt_number 0: 22023');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ib', '[{"line": 8, "kind": "attempt", "run_id": "r3", "rule_id": "V-1", "attempt_number": 1, "started_at": "2026-05-03 10:00+00", "ended_at": "2026-05-03 09:00+00", "passed": true}]')$$,
                 '22023', 'ctxgraph: run log line 8: attempt ends (2026-05-03 09:00:00+00) before it starts (2026-05-03 10:00:00+00)',
                 'an attempt that ends before it starts: 22023');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ib', '[{"line": 9, "kind": "attempt", "run_id": "r3", "rule_id": "V-1", "attempt_number": 1, "passed": false, "failure_mode": "cosmic_ray"}]')$$,
                 '22023', 'ctxgraph: run log line 9: unknown failure mode ''cosmic_ray''', 'an unknown failure mode: 22023');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ib', '[{"line": 9, "kind": "attempt", "run_id": "r3", "rule_id": "V-1", "attempt_number": 1, "passed": true, "failure_mode": "clean_failure"}]')$$,
                 '22023', 'ctxgraph: run log line 9: a passed attempt has no failure mode, got ''clean_failure''',
                 'a pass with a failure mode: 22023');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ib', '[{"line": 9, "kind": "attempt", "run_id": "r3", "rule_id": "V-1", "attempt_number": 1, "passed": false}]')$$,
                 '22023', 'ctxgraph: run log line 9: a failed attempt of graded skill ''ib'' needs a failure mode',
                 'a graded failure without a failure mode: 22023');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ib', '[{"line": 9, "kind": "attempt", "run_id": "r3", "rule_id": "V-1", "attempt_number": 1}]')$$,
                 '22004', 'ctxgraph: run log line 9: passed must not be NULL', 'an attempt without a result: 22004');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ib', '[{"line": 3, "kind": "attempt", "run_id": "r3", "rule_id": "V-1", "attempt_number": 1, "passed": true}, {"line": 12, "kind": "attempt", "run_id": "r3", "rule_id": "V-1", "attempt_number": 1, "passed": true}]')$$,
                 '23505', 'ctxgraph: run log line 12: attempt 1 of rule ''V-1'' in run ''r3'' is already saved (by line 3)',
                 'the same attempt twice in one log: 23505 at the second line');
SELECT throws_ok(format($$SELECT * FROM tests.ingest_log('ib', '[{"line": 2, "kind": "attempt", "run_id": "r1", "rule_id": "V-1", "attempt_number": 2, "passed": true}]')$$),
                 '23505', format('ctxgraph: run log line 2: attempt 2 of rule ''V-1'' in run ''r1'' is already saved (id %s)',
                                 (SELECT id FROM ib.attempts WHERE run_id = 'r1' AND rule_id = 'V-1' AND attempt_number = 2)),
                 'an attempt saved by an earlier load: 23505 with its id');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ib', '[{"line": 30, "kind": "retrieval", "run_id": "r3", "rule_id": "V-1", "attempt_number": 1, "retrieved_at": "2026-05-03 10:00+00", "tip_ids": [-1], "scores": [0.5]}, {"line": 20, "kind": "attempt", "run_id": "r3", "rule_id": "V-2", "attempt_number": 0, "passed": true}, {"line": 25, "kind": "retrieval", "run_id": null, "rule_id": "V-1", "attempt_number": 1, "retrieved_at": "2026-05-03 10:00+00", "tip_bodies": ["A", "A"], "scores": [0.5, 0.4]}]')$$,
                 '22023', 'ctxgraph: run log line 20: attempt_number must be 1 or more, got 0',
                 'the earliest bad line is the one reported, whatever its kind');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ib', '[{"line": 25, "kind": "retrieval", "run_id": null, "rule_id": "V-1", "attempt_number": 1, "retrieved_at": "2026-05-03 10:00+00", "tip_ids": [-1, -1], "scores": [0.5, 0.4]}]')$$,
                 '22004', 'ctxgraph: run log line 25: log_retrievals needs run_id, rule_id, tip_ids, similarity_scores and retrieved_at',
                 'within a line, the check log_retrievals makes first wins');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('nope', '[]')$$, '22023', 'ctxgraph: unknown skill ''nope''',
                 'an unknown skill: 22023, before any line');
-- A run's end before its start: the start of the run as this log leaves it (its first line that
-- writes, or the run's row), as an attempt's end before its start is refused.
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ib', '[{"line": 1, "kind": "retrieval", "run_id": "r5", "rule_id": "V-1", "attempt_number": 1, "retrieved_at": "2026-05-04 10:00+00", "tip_bodies": ["A"], "scores": [0.5]}, {"line": 2, "kind": "run_end", "run_id": "r5", "ended_at": "2026-05-04 09:00+00"}]')$$,
                 '22023', 'ctxgraph: run log line 2: run ''r5'' ends (2026-05-04 09:00:00+00) before it starts (2026-05-04 10:00:00+00)',
                 'a run_end before the start of the run this log starts: 22023 naming the line');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ib', '[{"line": 7, "kind": "run_end", "run_id": "r1", "ended_at": "2000-01-01 00:00+00"}]')$$,
                 '22023', NULL, 'a run_end before the start of a run saved earlier: 22023');
SELECT throws_ok($$UPDATE ib.runs SET ended_at = started_at - interval '1 hour' WHERE id = 'r1'$$,
                 '23514', NULL, 'and the runs table itself refuses an end before the start (runs_ends_after_start)');
-- Line numbers name lines: two lines staged with one number.
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ib', '[{"line": 1, "kind": "retrieval", "run_id": "r5", "rule_id": "V-1", "attempt_number": 1, "retrieved_at": "2026-05-04 10:00+00", "tip_bodies": ["A"], "scores": [0.5]}, {"line": 1, "kind": "attempt", "run_id": "r5", "rule_id": "V-1", "attempt_number": 1, "passed": true}]')$$,
                 '22023', 'ctxgraph: run log line 1: line number 1 is given to 2 lines',
                 'a line number given twice: 22023, before anything is linked by it');

-- ---------------------------------------------------------------------------------------------
-- Nothing half-written (3)
-- ---------------------------------------------------------------------------------------------
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ib', '[{"line": 1, "kind": "retrieval", "run_id": "r4", "rule_id": "V-1", "attempt_number": 1, "retrieved_at": "2026-05-04 10:00+00", "tip_bodies": ["A"], "scores": [0.5]}, {"line": 2, "kind": "attempt", "run_id": "r4", "rule_id": "V-1", "attempt_number": 1, "passed": true}, {"line": 3, "kind": "run_end", "run_id": "r4", "ended_at": "2026-05-04 11:00+00"}, {"line": 4, "kind": "retrieval", "run_id": "r4", "rule_id": "V-2", "attempt_number": 1, "retrieved_at": "2026-05-04 10:00+00", "tip_ids": [-9], "scores": [0.5]}]')$$,
                 '23503', 'ctxgraph: run log line 4: no ib tip with id -9', 'a log whose last line is bad is refused');
SELECT is((SELECT count(*) FROM ib.runs WHERE id = 'r4') + (SELECT count(*) FROM ib.attempts WHERE run_id = 'r4')
          + (SELECT count(*) FROM ib.tip_retrievals WHERE run_id = 'r4'), 0::bigint,
          'and none of its good lines was written: no run, attempt or retrieval');
SELECT set_eq($$SELECT * FROM tests.log_state('ib') WHERE part = 'tip_stats'$$,
              $$SELECT * FROM tests.log_state('ic') WHERE part = 'tip_stats'$$, 'and tip_stats did not move');

-- ---------------------------------------------------------------------------------------------
-- Privileges (4)
-- ---------------------------------------------------------------------------------------------
SELECT ok(has_function_privilege('ctxgraph_writer', 'ctxgraph.ingest_run_log(text)', 'EXECUTE')
          AND has_function_privilege('ctxgraph_writer', 'ctxgraph.ingest_staging()', 'EXECUTE'),
          'the writer may stage and ingest');
SELECT ok(NOT has_function_privilege('ctxgraph_scorer', 'ctxgraph.ingest_run_log(text)', 'EXECUTE')
          AND NOT has_function_privilege('ctxgraph_ranker', 'ctxgraph.ingest_run_log(text)', 'EXECUTE')
          AND NOT has_function_privilege('ctxgraph_analyst', 'ctxgraph.ingest_staging()', 'EXECUTE'),
          'the scorer, the ranker and the analyst may not');
-- The owner's staging table is the owner's: the writer's session makes its own.
DROP TABLE pg_temp.ctxgraph_run_log;
SELECT id AS tip_d FROM ib.tips WHERE body = 'D' \gset
SET LOCAL ROLE ctxgraph_writer;
SELECT ctxgraph.ingest_staging() AS staging \gset
INSERT INTO pg_temp.ctxgraph_run_log (line, kind, run_id, rule_id, attempt_number, retrieved_at, tip_ids,
                                      similarity_scores, passed)
VALUES (1, 'retrieval', 'r5', 'V-2', 1, '2026-05-05 10:00+00', ARRAY[:tip_d]::bigint[], ARRAY[0.5], NULL),
       (2, 'attempt', 'r5', 'V-2', 1, NULL, NULL, NULL, true);
SELECT results_eq($$SELECT * FROM ctxgraph.ingest_run_log('ib')$$, $$VALUES ('r5', 1, 1)$$,
                  'the writer stages and ingests a log with its own rights');
RESET ROLE;
SELECT is((SELECT outcome_value FROM ib.tip_retrievals WHERE run_id = 'r5'), 1.0::float8,
          'the writer''s load is linked and graded');

SELECT * FROM finish();
ROLLBACK;
