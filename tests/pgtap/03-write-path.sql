-- The agent's write path end to end: log_retrievals, save_attempt, update_retrieval_attempt_ids,
-- record_outcome; every error with its SQLSTATE, that a failed call writes nothing, and that one
-- skill's ids never reach another skill's rows.
--
-- Ids come from shared sequences a rollback does not rewind, so they are captured with psql's \gset
-- and used as :name (or passed through format() into the SQL that throws_ok runs). Rows are checked
-- by tip body, so the expected values can be read by eye.
BEGIN;
SELECT plan(88);

-- ---------------------------------------------------------------------------------------------
-- Fixtures: three tips on rule V-230221, one on V-230222, one cve tip.
-- ---------------------------------------------------------------------------------------------
SELECT tests.make_tip('stig', 'V-230221', 'A: set PASS_MAX_DAYS 60 in /etc/login.defs') AS tip_a,
       tests.make_tip('stig', 'V-230221', 'B: use chage -M 60 for existing users')      AS tip_b,
       tests.make_tip('stig', 'V-230221', 'C: do not edit /etc/shadow by hand')         AS tip_c,
       tests.make_tip('stig', 'V-230222', 'D: set PASS_MIN_DAYS 1')                     AS tip_d,
       tests.make_tip('cve', 'CVE-2024-3094', 'X: downgrade xz-utils to 5.4')           AS tip_x
\gset

-- ---------------------------------------------------------------------------------------------
-- log_retrievals (8)
-- ---------------------------------------------------------------------------------------------
SELECT is((SELECT count(*) FROM stig.runs WHERE id = 'run-7'), 0::bigint, 'run-7 does not exist before its first batch');

-- The Worker's first prompt for V-230221 carried B, A, C in that order (C without a score).
CREATE TEMP TABLE batch1 AS
SELECT l.id, l.ord
  FROM ctxgraph.log_retrievals('stig', 'run-7', 'V-230221', ARRAY[:tip_b, :tip_a, :tip_c]::bigint[],
                               ARRAY[0.91, 0.85, NULL]::double precision[], '2026-11-29 10:00:00+00')
       WITH ORDINALITY AS l (id, ord);

SELECT is((SELECT count(*) FROM batch1), 3::bigint, 'log_retrievals returns one id per tip');
SELECT results_eq(
    $$SELECT b.ord, r.rank, left(t.body, 1), r.similarity_score, r.run_id, r.rule_id, r.attempt_id,
             r.outcome_value, r.outcome_confidence, r.retrieved_at
        FROM batch1 AS b
        JOIN stig.tip_retrievals AS r ON r.id = b.id
        JOIN stig.tips AS t ON t.id = r.tip_id
       ORDER BY b.ord$$,
    $$VALUES (1::bigint, 1, 'B', 0.91::double precision, 'run-7', 'V-230221', NULL::bigint, NULL::double precision, NULL::double precision, '2026-11-29 10:00:00+00'::timestamptz),
             (2,         2, 'A', 0.85,                   'run-7', 'V-230221', NULL,         NULL,                   NULL,                   '2026-11-29 10:00:00+00'),
             (3,         3, 'C', NULL,                   'run-7', 'V-230221', NULL,         NULL,                   NULL,                   '2026-11-29 10:00:00+00')$$,
    'log_retrievals returns ids in rank order, ranks 1..n follow the array, scores and time are stored, nothing linked yet');
SELECT results_eq($$SELECT skill, id FROM stig.runs WHERE id = 'run-7'$$,
                  $$VALUES ('stig', 'run-7')$$,
                  'log_retrievals created the missing run');

-- A second batch in the same run reuses the run.
SELECT array_agg(l ORDER BY o) AS batch2
  FROM ctxgraph.log_retrievals('stig', 'run-7', 'V-230221', ARRAY[:tip_a, :tip_b]::bigint[],
                               ARRAY[0.88, 0.80], '2026-11-29 10:10:00+00') WITH ORDINALITY AS x (l, o)
\gset
SELECT is((SELECT count(*) FROM stig.runs WHERE id = 'run-7'), 1::bigint, 'a second batch reuses the run');
SELECT results_eq(
    format($$SELECT r.rank, left(t.body, 1) FROM stig.tip_retrievals AS r JOIN stig.tips AS t ON t.id = r.tip_id
              WHERE r.id = ANY (%L::bigint[]) ORDER BY r.rank$$, :'batch2'),
    $$VALUES (1, 'A'), (2, 'B')$$,
    'the second batch has its own ranks 1..2');

-- An empty batch is accepted and writes no retrieval.
SELECT is((SELECT count(*) FROM ctxgraph.log_retrievals('stig', 'run-7', 'V-230221', '{}', '{}', '2026-11-29 10:20:00+00')),
          0::bigint, 'an empty batch returns no ids');
SELECT is((SELECT count(*) FROM stig.tip_retrievals WHERE run_id = 'run-7'), 5::bigint, 'run-7 holds the five logged retrievals');

-- ---------------------------------------------------------------------------------------------
-- save_attempt (4)
-- ---------------------------------------------------------------------------------------------
SELECT ctxgraph.save_attempt('stig', 'run-7', 'V-230221', 1, 'edited login.defs',
                             '2026-11-29 10:00:05+00', '2026-11-29 10:04:00+00') AS att1,
       ctxgraph.save_attempt('stig', 'run-7', 'V-230221', 2, 'ran chage',
                             '2026-11-29 10:10:05+00', '2026-11-29 10:14:00+00') AS att2
\gset

SELECT results_eq(
    format($$SELECT id, skill, run_id, rule_id, attempt_number, passed, failure_mode, approach, started_at, ended_at
               FROM stig.attempts WHERE run_id = 'run-7' ORDER BY attempt_number$$),
    format($$VALUES (%s::bigint, 'stig', 'run-7', 'V-230221', 1, NULL::boolean, NULL::text, 'edited login.defs',
                     '2026-11-29 10:00:05+00'::timestamptz, '2026-11-29 10:04:00+00'::timestamptz),
                    (%s, 'stig', 'run-7', 'V-230221', 2, NULL, NULL, 'ran chage',
                     '2026-11-29 10:10:05+00', '2026-11-29 10:14:00+00')$$, :att1, :att2),
    'save_attempt returns the new attempt''s id and stores what it was given, with no verdict');

SELECT is((SELECT count(*) FROM stig.runs WHERE id = 'run-8'), 0::bigint, 'run-8 does not exist yet');
SELECT tests.make_attempt('stig', 'run-8', 'V-230222', 1) AS att8 \gset
SELECT results_eq($$SELECT r.skill, r.id, a.attempt_number FROM stig.runs AS r JOIN stig.attempts AS a ON a.run_id = r.id
                     WHERE r.id = 'run-8'$$,
                  $$VALUES ('stig', 'run-8', 1)$$,
                  'save_attempt created the missing run');
SELECT tests.make_attempt('cve', 'run-7', 'CVE-2024-3094', 3) AS att_cve \gset
SELECT results_eq(format($$SELECT skill FROM ctxgraph.attempts WHERE id = %s$$, :att_cve),
                  $$VALUES ('cve')$$,
                  'a cve attempt lands in cve.attempts, even in a run named like a stig run');

-- ---------------------------------------------------------------------------------------------
-- update_retrieval_attempt_ids (6)
-- ---------------------------------------------------------------------------------------------
SELECT array_agg(id ORDER BY ord) AS batch1 FROM batch1 \gset

SELECT is(ctxgraph.update_retrieval_attempt_ids('stig', :'batch1', :att1), 3,
          'linking the first batch to attempt 1 returns 3');
SELECT results_eq(format($$SELECT count(*) FILTER (WHERE attempt_id = %s), count(*) FILTER (WHERE attempt_id IS NULL)
                             FROM stig.tip_retrievals WHERE run_id = 'run-7'$$, :att1),
                  $$VALUES (3::bigint, 2::bigint)$$,
                  'the three rows are linked to attempt 1; the second batch is still unlinked');
SELECT is(ctxgraph.update_retrieval_attempt_ids('stig', :'batch1', :att1), 0,
          'linking the same rows to the same attempt again is a no-op returning 0');
SELECT is((SELECT count(*) FROM stig.tip_retrievals WHERE attempt_id = :att1), 3::bigint,
          'after the no-op the rows are still linked to attempt 1');

SELECT is(ctxgraph.update_retrieval_attempt_ids('stig', :'batch2', :att2), 2,
          'linking the second batch to attempt 2 returns 2');
SELECT is(ctxgraph.update_retrieval_attempt_ids('stig', '{}', :att2), 0,
          'linking an empty list returns 0');

-- ---------------------------------------------------------------------------------------------
-- record_outcome (12)
-- ---------------------------------------------------------------------------------------------
SELECT is(ctxgraph.record_outcome('stig', :att1, false, 'clean_failure'), 3,
          'recording attempt 1 (clean failure) fills its 3 retrievals');
SELECT results_eq(format($$SELECT attempt_id, left(t.body, 1), outcome_value, outcome_confidence
                             FROM stig.tip_retrievals AS r JOIN stig.tips AS t ON t.id = r.tip_id
                            WHERE r.run_id = 'run-7' ORDER BY r.retrieved_at, r.rank$$),
                  format($$VALUES (%1$s::bigint, 'B', 0.0::double precision, 1.0::double precision),
                                  (%1$s,         'A', 0.0,                   1.0),
                                  (%1$s,         'C', 0.0,                   1.0),
                                  (%2$s,         'A', NULL,                  NULL),
                                  (%2$s,         'B', NULL,                  NULL)$$, :att1, :att2),
                  'only attempt 1''s retrievals got 0.0 / 1.0; attempt 2''s rows are untouched and still NULL');
SELECT results_eq(format($$SELECT passed, failure_mode, ended_at FROM stig.attempts WHERE id = %s$$, :att1),
                  $$VALUES (false, 'clean_failure', '2026-11-29 10:04:00+00'::timestamptz)$$,
                  'the attempt keeps its verdict and mode; a known ended_at is kept');

SELECT is(ctxgraph.record_outcome('stig', :att2, true), 2, 'recording attempt 2 (pass) fills its 2 retrievals');
SELECT results_eq(format($$SELECT DISTINCT outcome_value, outcome_confidence FROM stig.tip_retrievals WHERE attempt_id = %s$$, :att2),
                  $$VALUES (0.8::double precision, 1.0::double precision)$$,
                  'a pass on attempt 2 of a stig rule is worth 0.8');

SELECT is(ctxgraph.record_outcome('stig', :att1, false, 'health_failure'), 3, 'recording attempt 1 again returns 3');
SELECT results_eq(format($$SELECT DISTINCT a.failure_mode, r.outcome_value FROM stig.attempts AS a
                             JOIN stig.tip_retrievals AS r ON r.attempt_id = a.id WHERE a.id = %s$$, :att1),
                  $$VALUES ('health_failure', -0.2::double precision)$$,
                  'recording again corrects the verdict and every retrieval (-0.2 for a health failure)');
SELECT is((SELECT DISTINCT outcome_value FROM stig.tip_retrievals WHERE attempt_id = :att2), 0.8::double precision,
          'correcting attempt 1 leaves attempt 2''s retrievals alone');

-- Linking after the outcome is known: a late batch for attempt 2 gets 0.8 at once.
SELECT array_agg(l) AS batch3
  FROM ctxgraph.log_retrievals('stig', 'run-7', 'V-230221', ARRAY[:tip_c]::bigint[], ARRAY[0.70], '2026-11-29 10:10:00+00') AS l
\gset
SELECT is(ctxgraph.update_retrieval_attempt_ids('stig', :'batch3', :att2), 1, 'linking a late row to a recorded attempt returns 1');
SELECT results_eq(format($$SELECT attempt_id, outcome_value, outcome_confidence FROM stig.tip_retrievals WHERE id = ANY (%L::bigint[])$$, :'batch3'),
                  format($$VALUES (%s::bigint, 0.8::double precision, 1.0::double precision)$$, :att2),
                  'a row linked after the outcome was recorded receives the outcome');

SELECT is(ctxgraph.record_outcome('stig', :att8, true), 0, 'recording an attempt without retrievals returns 0');
SELECT results_eq(format($$SELECT passed, failure_mode, ended_at IS NOT NULL FROM stig.attempts WHERE id = %s$$, :att8),
                  $$VALUES (true, NULL::text, true)$$,
                  'a pass is stored without a failure mode, and ended_at is filled');

-- ---------------------------------------------------------------------------------------------
-- cve: the same path with binary outcomes (3)
-- ---------------------------------------------------------------------------------------------
SELECT array_agg(l) AS batch_cve
  FROM ctxgraph.log_retrievals('cve', 'run-7', 'CVE-2024-3094', ARRAY[:tip_x]::bigint[], ARRAY[0.77], '2026-11-29 11:00:00+00') AS l
\gset
SELECT is(ctxgraph.update_retrieval_attempt_ids('cve', :'batch_cve', :att_cve), 1, 'cve: linking returns 1');
SELECT is(ctxgraph.record_outcome('cve', :att_cve, true), 1, 'cve: recording returns 1');
SELECT results_eq(format($$SELECT skill, outcome_value FROM ctxgraph.tip_retrievals WHERE id = ANY (%L::bigint[])$$, :'batch_cve'),
                  $$VALUES ('cve', 1.0::double precision)$$,
                  'cve: a pass on attempt 3 is worth 1.0 (binary)');

-- ---------------------------------------------------------------------------------------------
-- update_retrieval_attempt_ids refusals (13)
-- ---------------------------------------------------------------------------------------------
SELECT array_agg(l) AS batch_run8
  FROM ctxgraph.log_retrievals('stig', 'run-8', 'V-230221', ARRAY[:tip_a]::bigint[], ARRAY[0.5], '2026-11-29 10:30:00+00') AS l
\gset
SELECT array_agg(l) AS batch_rule_d
  FROM ctxgraph.log_retrievals('stig', 'run-7', 'V-230222', ARRAY[:tip_d]::bigint[], ARRAY[0.6], '2026-11-29 10:30:00+00') AS l
\gset
SELECT array_agg(l) AS batch_new
  FROM ctxgraph.log_retrievals('stig', 'run-7', 'V-230221', ARRAY[:tip_a]::bigint[], ARRAY[0.9], '2026-11-29 10:40:00+00') AS l
\gset

SELECT throws_ok(format($$SELECT ctxgraph.update_retrieval_attempt_ids('stig', %L, %s)$$, :'batch_run8', :att1),
                 '22023',
                 format('ctxgraph: retrievals %s are not of run ''run-7'' and rule ''V-230221'' like attempt %s',
                        (:'batch_run8'::bigint[])[1], :att1),
                 'a retrieval of another run cannot be linked (22023)');
SELECT throws_ok(format($$SELECT ctxgraph.update_retrieval_attempt_ids('stig', %L, %s)$$, :'batch_rule_d', :att1),
                 '22023',
                 format('ctxgraph: retrievals %s are not of run ''run-7'' and rule ''V-230221'' like attempt %s',
                        (:'batch_rule_d'::bigint[])[1], :att1),
                 'a retrieval of another rule cannot be linked (22023)');
SELECT throws_ok(format($$SELECT ctxgraph.update_retrieval_attempt_ids('stig', %L, %s)$$, :'batch1', :att2),
                 '22023',
                 format('ctxgraph: retrievals %s are already linked to another attempt',
                        (SELECT string_agg(x::text, ', ' ORDER BY x) FROM unnest(:'batch1'::bigint[]) AS x)),
                 'attempt 1''s retrievals cannot be moved to attempt 2 (22023)');
SELECT throws_ok(format($$SELECT ctxgraph.update_retrieval_attempt_ids('stig', ARRAY[%s, %s]::bigint[], %s)$$,
                        (:'batch_new'::bigint[])[1], (:'batch1'::bigint[])[1], :att2),
                 '22023', NULL,
                 'a batch mixing a free row with attempt 1''s row is refused as a whole (22023)');
SELECT is((SELECT attempt_id FROM stig.tip_retrievals WHERE id = (:'batch_new'::bigint[])[1]), NULL::bigint,
          'the refused batch linked nothing: its free row is still unlinked');
SELECT throws_ok(format($$SELECT ctxgraph.update_retrieval_attempt_ids('stig', ARRAY[%s, -1]::bigint[], %s)$$,
                        (:'batch_new'::bigint[])[1], :att2),
                 'P0002', 'ctxgraph: no stig retrieval with id -1',
                 'an unknown retrieval id raises P0002');
SELECT throws_ok(format($$SELECT ctxgraph.update_retrieval_attempt_ids('stig', %L, -1)$$, :'batch_new'),
                 'P0002', 'ctxgraph: no stig attempt with id -1',
                 'an unknown attempt raises P0002');
SELECT throws_ok(format($$SELECT ctxgraph.update_retrieval_attempt_ids('stig', %L, %s)$$, :'batch_cve', :att1),
                 'P0002', format('ctxgraph: no stig retrieval with id %s', (:'batch_cve'::bigint[])[1]),
                 'a cve retrieval id is unknown to stig (P0002)');
SELECT throws_ok(format($$SELECT ctxgraph.update_retrieval_attempt_ids('stig', %L, %s)$$, :'batch_new', :att_cve),
                 'P0002', format('ctxgraph: no stig attempt with id %s', :att_cve),
                 'a cve attempt id is unknown to stig (P0002)');
SELECT throws_ok(format($$SELECT ctxgraph.update_retrieval_attempt_ids('stig', NULL, %s)$$, :att2),
                 '22004', 'ctxgraph: update_retrieval_attempt_ids needs retrieval_ids and attempt_id',
                 'NULL retrieval_ids raises 22004');
SELECT throws_ok(format($$SELECT ctxgraph.update_retrieval_attempt_ids('stig', %L, NULL)$$, :'batch_new'),
                 '22004', 'ctxgraph: update_retrieval_attempt_ids needs retrieval_ids and attempt_id',
                 'NULL attempt_id raises 22004');
SELECT throws_ok(format($$SELECT ctxgraph.update_retrieval_attempt_ids('stig', ARRAY[%s, NULL]::bigint[], %s)$$,
                        (:'batch_new'::bigint[])[1], :att2),
                 '22004', 'ctxgraph: retrieval_ids must not contain NULL',
                 'a NULL retrieval id raises 22004');
SELECT throws_ok(format($$SELECT ctxgraph.update_retrieval_attempt_ids('nope', %L, %s)$$, :'batch_new', :att2),
                 '22023', 'ctxgraph: unknown skill ''nope''',
                 'update_retrieval_attempt_ids: unknown skill raises 22023');

-- ---------------------------------------------------------------------------------------------
-- record_outcome refusals (10)
-- ---------------------------------------------------------------------------------------------
SELECT throws_ok($$SELECT ctxgraph.record_outcome('stig', NULL, true)$$,
                 '22004', 'ctxgraph: attempt_id must not be NULL', 'record_outcome: NULL attempt_id raises 22004');
SELECT throws_ok($$SELECT ctxgraph.record_outcome('stig', -1, true)$$,
                 'P0002', 'ctxgraph: no stig attempt with id -1', 'record_outcome: unknown attempt raises P0002');
SELECT throws_ok(format($$SELECT ctxgraph.record_outcome('stig', %s, true)$$, :att_cve),
                 'P0002', format('ctxgraph: no stig attempt with id %s', :att_cve),
                 'record_outcome: a cve attempt id is unknown to stig (P0002)');
SELECT throws_ok(format($$SELECT ctxgraph.record_outcome('stig', %s, NULL)$$, :att1),
                 '22004', 'ctxgraph: passed must not be NULL', 'record_outcome: NULL passed raises 22004');
SELECT throws_ok(format($$SELECT ctxgraph.record_outcome('stig', %s, false, 'timeout')$$, :att1),
                 '22023', 'ctxgraph: unknown failure mode ''timeout''', 'record_outcome: unknown failure mode raises 22023');
SELECT throws_ok(format($$SELECT ctxgraph.record_outcome('stig', %s, false)$$, :att1),
                 '22023', 'ctxgraph: a failed attempt of graded skill ''stig'' needs a failure mode',
                 'record_outcome: a stig failure without a mode raises 22023');
SELECT throws_ok(format($$SELECT ctxgraph.record_outcome('stig', %s, true, 'clean_failure')$$, :att1),
                 '22023', 'ctxgraph: a passed attempt has no failure mode, got ''clean_failure''',
                 'record_outcome: a pass with a failure mode raises 22023');
SELECT throws_ok(format($$SELECT ctxgraph.record_outcome(NULL, %s, true)$$, :att1),
                 '22004', 'ctxgraph: skill must not be NULL', 'record_outcome: NULL skill raises 22004');
SELECT throws_ok(format($$SELECT ctxgraph.record_outcome('nope', %s, true)$$, :att1),
                 '22023', 'ctxgraph: unknown skill ''nope''', 'record_outcome: unknown skill raises 22023');
SELECT results_eq(format($$SELECT DISTINCT a.passed, a.failure_mode, r.outcome_value FROM stig.attempts AS a
                             JOIN stig.tip_retrievals AS r ON r.attempt_id = a.id WHERE a.id = %s$$, :att1),
                  $$VALUES (false, 'health_failure', -0.2::double precision)$$,
                  'the refused record_outcome calls wrote nothing: attempt 1 keeps its health failure and -0.2');

-- ---------------------------------------------------------------------------------------------
-- log_retrievals refusals (20); a failing batch in a fresh run writes neither rows nor the run.
-- ---------------------------------------------------------------------------------------------
SELECT count(*) AS retrievals_before FROM ctxgraph.tip_retrievals \gset

SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-fail', 'V-230221', ARRAY[%s, %s]::bigint[], ARRAY[0.9])$$, :tip_a, :tip_b),
                 '22023', 'ctxgraph: 2 tip ids but 1 similarity scores', 'mismatched array lengths raise 22023');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-fail', 'V-230221', ARRAY[%s, NULL]::bigint[], ARRAY[0.9, 0.8])$$, :tip_a),
                 '22004', 'ctxgraph: tip_ids must not contain NULL', 'a NULL tip id raises 22004');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-fail', 'V-230221', ARRAY[%s, -1]::bigint[], ARRAY[0.9, 0.8])$$, :tip_a),
                 '23503', 'ctxgraph: no stig tip with id -1', 'an unknown tip raises 23503 and nothing of the batch is written');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-fail', 'V-230221', ARRAY[%s, %s, %s]::bigint[], ARRAY[0.9, 0.8, 0.7])$$, :tip_a, :tip_b, :tip_a),
                 '22023', 'ctxgraph: a tip appears twice in one retrieval batch', 'a duplicate tip in one batch raises 22023');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-fail', 'V-230221', ARRAY[%s]::bigint[], ARRAY['NaN']::double precision[])$$, :tip_a),
                 '22023', 'ctxgraph: similarity_scores must not contain NaN', 'a NaN similarity raises 22023');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-fail', 'V-230221', ARRAY[[%s]]::bigint[], ARRAY[[0.9]])$$, :tip_a),
                 '22023', 'ctxgraph: tip_ids and similarity_scores must be one-dimensional arrays', 'two-dimensional arrays raise 22023');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', NULL, 'V-230221', ARRAY[%s]::bigint[], ARRAY[0.9])$$, :tip_a),
                 '22004', 'ctxgraph: log_retrievals needs run_id, rule_id, tip_ids, similarity_scores and retrieved_at',
                 'a NULL run_id raises 22004');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-fail', NULL, ARRAY[%s]::bigint[], ARRAY[0.9])$$, :tip_a),
                 '22004', 'ctxgraph: log_retrievals needs run_id, rule_id, tip_ids, similarity_scores and retrieved_at',
                 'a NULL rule_id raises 22004');
SELECT throws_ok($$SELECT ctxgraph.log_retrievals('stig', 'run-fail', 'V-230221', NULL, ARRAY[0.9])$$,
                 '22004', 'ctxgraph: log_retrievals needs run_id, rule_id, tip_ids, similarity_scores and retrieved_at',
                 'NULL tip_ids raises 22004');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-fail', 'V-230221', ARRAY[%s]::bigint[], NULL)$$, :tip_a),
                 '22004', 'ctxgraph: log_retrievals needs run_id, rule_id, tip_ids, similarity_scores and retrieved_at',
                 'NULL similarity_scores raises 22004');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-fail', 'V-230221', ARRAY[%s]::bigint[], ARRAY[0.9], NULL)$$, :tip_a),
                 '22004', 'ctxgraph: log_retrievals needs run_id, rule_id, tip_ids, similarity_scores and retrieved_at',
                 'a NULL retrieved_at raises 22004');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', ' ', 'V-230221', ARRAY[%s]::bigint[], ARRAY[0.9])$$, :tip_a),
                 '22023', 'ctxgraph: run_id and rule_id must not be empty', 'a blank run_id raises 22023');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals(NULL, 'run-fail', 'V-230221', ARRAY[%s]::bigint[], ARRAY[0.9])$$, :tip_a),
                 '22004', 'ctxgraph: skill must not be NULL', 'log_retrievals: NULL skill raises 22004');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('nope', 'run-fail', 'V-230221', ARRAY[%s]::bigint[], ARRAY[0.9])$$, :tip_a),
                 '22023', 'ctxgraph: unknown skill ''nope''', 'log_retrievals: unknown skill raises 22023');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-fail', 'CVE-2024-3094', ARRAY[%s]::bigint[], ARRAY[0.9])$$, :tip_x),
                 '23503', format('ctxgraph: no stig tip with id %s', :tip_x),
                 'cross-skill isolation: a cve tip id cannot be logged for stig (23503)');
SELECT throws_ok(format($$INSERT INTO ctxgraph.tip_retrievals (skill, run_id, tip_id, rule_id, rank) VALUES ('stig', 'run-7', %s, 'V-230221', 1)$$, :tip_x),
                 '23503', NULL,
                 'cross-skill isolation holds without the function too: the (skill, tip_id) key refuses a cve tip in stig');
SELECT throws_ok(format($$INSERT INTO stig.tip_retrievals (run_id, attempt_id, tip_id, rule_id, rank) VALUES ('run-7', %s, %s, 'V-230221', 1)$$, :att_cve, :tip_a),
                 '23503', NULL,
                 'cross-skill isolation: the (skill, attempt_id) key refuses a cve attempt on a stig row');
SELECT is((SELECT count(*) FROM ctxgraph.tip_retrievals), :retrievals_before::bigint,
          'the refused batches wrote no retrieval');
SELECT is((SELECT count(*) FROM ctxgraph.runs WHERE id = 'run-fail'), 0::bigint,
          'the refused batches created no run');
SELECT is((SELECT count(*) FROM stig.tip_retrievals WHERE run_id = 'run-7' AND rule_id = 'V-230221'), 7::bigint,
          'run-7 / V-230221 still holds exactly its seven good retrievals (3 + 2 + 1 late + 1 free)');

-- ---------------------------------------------------------------------------------------------
-- save_attempt refusals (12)
-- ---------------------------------------------------------------------------------------------
SELECT count(*) AS attempts_before FROM ctxgraph.attempts \gset

SELECT throws_ok($$SELECT ctxgraph.save_attempt('stig', 'run-7', 'V-230221', 1)$$,
                 '23505', format('ctxgraph: attempt 1 of rule ''V-230221'' in run ''run-7'' is already saved (id %s)', :att1),
                 'saving the same run, rule and attempt number twice raises 23505 naming the existing id');
SELECT throws_ok($$SELECT ctxgraph.save_attempt('stig', NULL, 'V-230221', 1)$$,
                 '22004', 'ctxgraph: save_attempt needs run_id, rule_id and attempt_number', 'save_attempt: NULL run_id raises 22004');
SELECT throws_ok($$SELECT ctxgraph.save_attempt('stig', 'run-fail', NULL, 1)$$,
                 '22004', 'ctxgraph: save_attempt needs run_id, rule_id and attempt_number', 'save_attempt: NULL rule_id raises 22004');
SELECT throws_ok($$SELECT ctxgraph.save_attempt('stig', 'run-fail', 'V-230221', NULL)$$,
                 '22004', 'ctxgraph: save_attempt needs run_id, rule_id and attempt_number', 'save_attempt: NULL attempt_number raises 22004');
SELECT throws_ok($$SELECT ctxgraph.save_attempt('stig', 'run-fail', 'V-230221', 0)$$,
                 '22023', 'ctxgraph: attempt_number must be 1 or more, got 0', 'save_attempt: attempt_number 0 raises 22023');
SELECT throws_ok($$SELECT ctxgraph.save_attempt('stig', 'run-fail', '', 1)$$,
                 '22023', 'ctxgraph: run_id and rule_id must not be empty', 'save_attempt: an empty rule_id raises 22023');
SELECT throws_ok($$SELECT ctxgraph.save_attempt(NULL, 'run-fail', 'V-230221', 1)$$,
                 '22004', 'ctxgraph: skill must not be NULL', 'save_attempt: NULL skill raises 22004');
SELECT throws_ok($$SELECT ctxgraph.save_attempt('nope', 'run-fail', 'V-230221', 1)$$,
                 '22023', 'ctxgraph: unknown skill ''nope''', 'save_attempt: unknown skill raises 22023');
SELECT throws_ok($$SELECT ctxgraph.save_attempt('stig', 'run-fail', 'V-230221', 1, NULL,
                                                '2026-11-29 10:05:00+00', '2026-11-29 10:00:00+00')$$,
                 '22023', NULL, 'save_attempt: an attempt that ends before it starts raises 22023');
SELECT is((SELECT count(*) FROM ctxgraph.attempts), :attempts_before::bigint, 'the refused saves wrote no attempt');
SELECT is((SELECT count(*) FROM ctxgraph.runs WHERE id = 'run-fail'), 0::bigint, 'the refused saves created no run');
SELECT lives_ok($$SELECT ctxgraph.save_attempt('cve', 'run-7', 'V-230221', 1)$$,
                'the same run, rule and attempt number is a different attempt in another skill');

SELECT * FROM finish();
ROLLBACK;
