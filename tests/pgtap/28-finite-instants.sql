-- Every instant the log keeps is finite. A retrieval at +infinity would sort after every fit's
-- as_of for ever (fit_state would call a fit current only as of its own instant, tip_evidence would
-- read the whole log) and the writer could not take it back. The write-path functions refuse
-- infinity and -infinity with 22023 (a bulk load naming the line); the tables' checks refuse them
-- from a plain INSERT or UPDATE with 23514. A finite instant in the future is kept as given.
BEGIN;
SELECT plan(16);

SELECT tests.make_tip('stig', 'V-1', 'A: set PASS_MAX_DAYS 60') AS tip_a \gset
SELECT ctxgraph.save_attempt('stig', 'run-f', 'V-1', 1, NULL, '2026-11-29 12:00+00', '2026-11-29 12:05+00') AS att_f \gset

-- ---------------------------------------------------------------------------------------------
-- The per-call functions (7)
-- ---------------------------------------------------------------------------------------------
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-f', 'V-1', ARRAY[%s]::bigint[], ARRAY[0.5], %L)$$,
                        :tip_a, i.instant),
                 '22023', 'ctxgraph: retrieved_at must be a finite instant, got ' || i.instant,
                 format('log_retrievals refuses retrieved_at %s (22023)', i.instant))
  FROM (VALUES (1, 'infinity'), (2, '-infinity')) AS i (n, instant) ORDER BY i.n;
SELECT throws_ok($$SELECT ctxgraph.save_attempt('stig', 'run-f', 'V-1', 2, NULL, 'infinity', NULL)$$,
                 '22023', 'ctxgraph: started_at and ended_at must be finite instants, got infinity and NULL',
                 'save_attempt refuses a start at infinity (22023)');
SELECT throws_ok($$SELECT ctxgraph.save_attempt('stig', 'run-f', 'V-1', 2, NULL, '2026-11-29 12:00+00', 'infinity')$$,
                 '22023', 'ctxgraph: started_at and ended_at must be finite instants, got 2026-11-29 12:00:00+00 and infinity',
                 'save_attempt refuses an end at infinity (22023)');
SELECT throws_ok(format($$SELECT ctxgraph.record_outcome('stig', %s, true, NULL, 'infinity')$$, :att_f),
                 '22023', 'ctxgraph: ended_at must be a finite instant, got infinity',
                 'record_outcome refuses an end at infinity (22023)');
SELECT lives_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-f', 'V-1', ARRAY[%s]::bigint[], ARRAY[0.5],
                                                        '2031-01-01 00:00+00')$$, :tip_a),
                'a finite instant in the future is kept as given');
SELECT is((SELECT count(*) FROM stig.tip_retrievals WHERE NOT isfinite(retrieved_at)), 0::bigint,
          'no retrieval at infinity was stored');

-- ---------------------------------------------------------------------------------------------
-- The bulk ingest names the line (3)
-- ---------------------------------------------------------------------------------------------
SELECT throws_ok($$SELECT * FROM tests.ingest_log('stig', '[{"line": 1, "kind": "retrieval", "run_id": "run-b", "rule_id": "V-1", "attempt_number": 1, "retrieved_at": "2026-11-29 10:00+00", "tip_bodies": ["A: set PASS_MAX_DAYS 60"], "scores": [0.5]}, {"line": 2, "kind": "retrieval", "run_id": "run-b", "rule_id": "V-1", "attempt_number": 1, "retrieved_at": "infinity", "tip_bodies": ["A: set PASS_MAX_DAYS 60"], "scores": [0.5]}]')$$,
                 '22023', 'ctxgraph: run log line 2: retrieved_at must be a finite instant, got infinity',
                 'ingest_run_log refuses a retrieval line at infinity, naming it (22023)');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('stig', '[{"line": 1, "kind": "attempt", "run_id": "run-b", "rule_id": "V-1", "attempt_number": 1, "started_at": "-infinity", "passed": true}]')$$,
                 '22023', 'ctxgraph: run log line 1: started_at and ended_at must be finite instants, got -infinity and NULL',
                 'ingest_run_log refuses an attempt line starting at -infinity, naming it (22023)');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('stig', '[{"line": 1, "kind": "attempt", "run_id": "run-b", "rule_id": "V-1", "attempt_number": 1, "passed": true}, {"line": 2, "kind": "run_end", "run_id": "run-b", "ended_at": "infinity"}]')$$,
                 '22023', 'ctxgraph: run log line 2: a run''s ended_at must be a finite instant, got infinity',
                 'ingest_run_log refuses a run_end line at infinity, naming it (22023)');

-- ---------------------------------------------------------------------------------------------
-- The tables hold the writer's plain statements to it (6)
-- ---------------------------------------------------------------------------------------------
SET LOCAL ROLE ctxgraph_writer;
SELECT throws_ok(format($$INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, retrieved_at)
                          VALUES ('run-f', %s, 'V-1', 1, 'infinity')$$, :tip_a),
                 '23514', NULL, 'writer: a plain INSERT of a retrieval at infinity is refused (23514)');
SELECT throws_ok(format($$INSERT INTO ctxgraph.tip_retrievals (skill, run_id, tip_id, rule_id, rank, retrieved_at)
                          VALUES ('stig', 'run-f', %s, 'V-1', 1, '-infinity')$$, :tip_a),
                 '23514', NULL, 'writer: the same through the parent at -infinity is refused (23514)');
SELECT throws_ok($$INSERT INTO stig.attempts (run_id, rule_id, attempt_number, started_at) VALUES ('run-f', 'V-1', 3, 'infinity')$$,
                 '23514', NULL, 'writer: a plain INSERT of an attempt starting at infinity is refused (23514)');
SELECT throws_ok($$UPDATE stig.runs SET ended_at = 'infinity' WHERE id = 'run-f'$$,
                 '23514', NULL, 'writer: ending a run at infinity is refused (23514)');
SELECT throws_ok($$INSERT INTO stig.runs (id, started_at) VALUES ('run-x', '-infinity')$$,
                 '23514', NULL, 'writer: a run starting at -infinity is refused (23514)');
RESET ROLE;
SELECT is((SELECT count(*) FROM pg_catalog.pg_constraint AS c JOIN pg_catalog.pg_inherits AS i ON i.inhrelid = c.conrelid
            WHERE i.inhparent IN ('ctxgraph.tip_retrievals'::regclass, 'ctxgraph.attempts'::regclass, 'ctxgraph.runs'::regclass)
              AND c.conname IN ('retrievals_finite_instant', 'attempts_finite_instants', 'runs_finite_instants')
              AND i.inhrelid IN ('stig.tip_retrievals'::regclass, 'stig.attempts'::regclass, 'stig.runs'::regclass)),
          3::bigint, 'stig''s partitions hold the three checks');

SELECT * FROM finish();
ROLLBACK;
