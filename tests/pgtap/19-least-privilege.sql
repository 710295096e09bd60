-- Least privilege for the writer, both ways. It does the whole write path (plain INSERTs of tips
-- and log rows, the per-call functions, the bulk ingest, a run's end), and it cannot name what is
-- not the write path's to set: a follow verdict, a cosine, a scoring time, an embedding, a tip's
-- created_at or retired_at, an id, an attempt's result, a retrieval's link or outcome. Links and
-- outcomes change only through the functions, whose checks therefore always apply. Every refusal
-- is 42501, on the parents, on a skill's partitions, and on a skill added later.
BEGIN;
SELECT plan(49);

SELECT tests.make_tip('stig', 'V-1', 'A: set PASS_MAX_DAYS 60') AS tip_a \gset
SELECT tests.make_tip('stig', 'V-1', 'B: set PASS_MIN_DAYS 1') AS tip_b \gset
SELECT tests.make_attempt_with_retrievals('stig', 'run-o', 'V-1', 1, ARRAY[:tip_a]::bigint[], false, 'clean_failure') AS att_o \gset
SELECT id AS rid_o FROM stig.tip_retrievals WHERE attempt_id = :att_o \gset

-- ---------------------------------------------------------------------------------------------
-- The write path runs with its owner's rights and a fixed search_path (6)
-- ---------------------------------------------------------------------------------------------
SELECT ok((SELECT p.prosecdef AND p.proconfig @> ARRAY['search_path=pg_catalog, ctxgraph, pg_temp']
             FROM pg_catalog.pg_proc AS p WHERE p.oid = f::regprocedure),
          format('%s is SECURITY DEFINER with a fixed search_path', f))
  FROM unnest(ARRAY['ctxgraph.save_attempt(text, text, text, integer, text, timestamptz, timestamptz)',
                    'ctxgraph.log_retrievals(text, text, text, bigint[], double precision[], timestamptz)',
                    'ctxgraph.update_retrieval_attempt_ids(text, bigint[], bigint)',
                    'ctxgraph.record_outcome(text, bigint, boolean, text, timestamptz)',
                    'ctxgraph.ingest_staging()', 'ctxgraph.ingest_run_log(text)']) AS f;

-- ---------------------------------------------------------------------------------------------
-- The writer does the write path (10)
-- ---------------------------------------------------------------------------------------------
SET LOCAL ROLE ctxgraph_writer;
SELECT lives_ok($$INSERT INTO stig.tips (rule_id, body) VALUES ('V-1', 'C: plain insert')$$,
                'writer: a plain INSERT of a tip''s rule and body works');
SELECT lives_ok($$INSERT INTO ctxgraph.tips (skill, rule_id, body) VALUES ('cve', 'CVE-1', 'D: through the parent')$$,
                'writer: the same through the parent works');
SELECT lives_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-w', 'V-1', ARRAY[%s, %s]::bigint[],
                                                        ARRAY[0.9, 0.4], '2026-11-29 12:00:00+00')$$, :tip_a, :tip_b),
                'writer: log_retrievals works');
SELECT lives_ok(format($$INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, similarity_score, retrieved_at)
                         VALUES ('run-w', %s, 'V-1', 3, 0.2, '2026-11-29 12:00:00+00')$$, :tip_a),
                'writer: a plain INSERT of what it logs works');
SELECT lives_ok($$SELECT ctxgraph.save_attempt('stig', 'run-w', 'V-1', 1, 'edited login.defs',
                                               '2026-11-29 12:00:01+00', '2026-11-29 12:05:00+00')$$,
                'writer: save_attempt works');
SELECT lives_ok($$INSERT INTO stig.attempts (run_id, rule_id, attempt_number, approach) VALUES ('run-w', 'V-1', 2, 'plain')$$,
                'writer: a plain INSERT of an attempt without its result works');
SELECT lives_ok($$SELECT ctxgraph.update_retrieval_attempt_ids('stig',
                      (SELECT array_agg(id) FROM stig.tip_retrievals WHERE run_id = 'run-w'),
                      (SELECT id FROM stig.attempts WHERE run_id = 'run-w' AND attempt_number = 1))$$,
                'writer: update_retrieval_attempt_ids links its retrievals');
SELECT lives_ok($$SELECT ctxgraph.record_outcome('stig', (SELECT id FROM stig.attempts WHERE run_id = 'run-w' AND attempt_number = 1),
                                                 true)$$,
                'writer: record_outcome records the result and the outcomes');
SELECT lives_ok($$UPDATE stig.runs SET ended_at = '2026-11-29 13:00:00+00' WHERE id = 'run-w'$$,
                'writer: closing a run (its end) works');
SELECT ctxgraph.ingest_staging() AS staging \gset
INSERT INTO pg_temp.ctxgraph_run_log (line, kind, run_id, rule_id, attempt_number, retrieved_at, tip_ids,
                                      similarity_scores, passed, failure_mode)
VALUES (1, 'retrieval', 'run-b', 'V-1', 1, '2026-11-29 14:00:00+00', ARRAY[:tip_b]::bigint[], ARRAY[0.5], NULL, NULL),
       (2, 'attempt', 'run-b', 'V-1', 1, NULL, NULL, NULL, false, 'clean_failure');
SELECT results_eq($$SELECT * FROM ctxgraph.ingest_run_log('stig')$$, $$VALUES ('run-b', 1, 1)$$,
                  'writer: stages and ingests a run log (results, links and outcomes written by the owner)');

-- ---------------------------------------------------------------------------------------------
-- ... and cannot set what is not the write path's (26)
-- ---------------------------------------------------------------------------------------------
SELECT throws_ok(format($$INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, %I)
                          VALUES ('run-w', %s, 'V-1', 9, %s)$$, c.col, :tip_a, c.val),
                 '42501', 'permission denied for table tip_retrievals',
                 format('writer: INSERT of a retrieval with its own %s is refused (42501)', c.col))
  FROM (VALUES (1, 'tip_followed_llm', 'true'), (2, 'tip_followed_emb', '0.9'),
               (3, 'tip_followed_computed_at', 'now()'), (4, 'follow_probability', '0.9'),
               (5, 'attempt_id', :att_o::text), (6, 'outcome_value', '1.0'), (7, 'outcome_confidence', '1.0'),
               (8, 'id', '999999')) AS c (n, col, val)
 ORDER BY c.n;
SELECT throws_ok(format($$INSERT INTO ctxgraph.tip_retrievals (skill, run_id, tip_id, rule_id, rank, tip_followed_llm)
                          VALUES ('stig', 'run-w', %s, 'V-1', 9, true)$$, :tip_a),
                 '42501', 'permission denied for table tip_retrievals',
                 'writer: the same follow verdict through the parent is refused (42501)');
SELECT throws_ok(format($$INSERT INTO stig.tips (rule_id, body, %I) VALUES ('V-1', 'E: forged', %s)$$, c.col, c.val),
                 '42501', 'permission denied for table tips',
                 format('writer: INSERT of a tip with its own %s is refused (42501)', c.col))
  FROM (VALUES (1, 'embedding', 'array_fill(0.05, ARRAY[384])::real[]::vector'),
               (2, 'created_at', '''2020-01-01 00:00:00+00'''), (3, 'retired_at', 'now()'),
               (4, 'id', '999999')) AS c (n, col, val)
 ORDER BY c.n;
SELECT throws_ok(format($$INSERT INTO stig.attempts (run_id, rule_id, attempt_number, %I) VALUES ('run-w', 'V-1', 5, %s)$$,
                        c.col, c.val),
                 '42501', 'permission denied for table attempts',
                 format('writer: INSERT of an attempt with its own %s is refused (42501)', c.col))
  FROM (VALUES (1, 'passed', 'true'), (2, 'failure_mode', '''clean_failure'''), (3, 'id', '999999')) AS c (n, col, val)
 ORDER BY c.n;
SELECT throws_ok(format($$UPDATE stig.tip_retrievals SET %I = %s WHERE id = %s$$, c.col, c.val, :rid_o),
                 '42501', 'permission denied for table tip_retrievals',
                 format('writer: UPDATE of a retrieval''s %s is refused (42501)', c.col))
  FROM (VALUES (1, 'attempt_id', 'NULL'), (2, 'outcome_value', '1.0'), (3, 'outcome_confidence', '0.5'),
               (4, 'tip_followed_llm', 'true')) AS c (n, col, val)
 ORDER BY c.n;
SELECT throws_ok(format($$UPDATE ctxgraph.tip_retrievals SET outcome_value = 1.0 WHERE skill = 'stig' AND id = %s$$, :rid_o),
                 '42501', 'permission denied for table tip_retrievals',
                 'writer: the same outcome through the parent is refused (42501)');
SELECT throws_ok(format($$UPDATE stig.attempts SET %I = %s WHERE id = %s$$, c.col, c.val, :att_o),
                 '42501', 'permission denied for table attempts',
                 format('writer: UPDATE of an attempt''s %s is refused (42501)', c.col))
  FROM (VALUES (1, 'passed', 'true'), (2, 'failure_mode', 'NULL')) AS c (n, col, val)
 ORDER BY c.n;
SELECT throws_ok(format($$UPDATE stig.tips SET retired_at = now() WHERE id = %s$$, :tip_a),
                 '42501', 'permission denied for table tips', 'writer: retiring a tip by UPDATE is refused (42501)');
SELECT throws_ok(format($$UPDATE stig.tips SET embedding = NULL WHERE id = %s$$, :tip_a),
                 '42501', 'permission denied for table tips', 'writer: UPDATE of a tip''s embedding is refused (42501)');

-- The one way left to link is the function, and its checks hold: another run's retrieval is refused.
SELECT throws_ok(format($$SELECT ctxgraph.update_retrieval_attempt_ids('stig', ARRAY[%s]::bigint[],
                            (SELECT id FROM stig.attempts WHERE run_id = 'run-w' AND attempt_number = 2))$$, :rid_o),
                 '22023', NULL, 'writer: linking another run''s retrieval through the function is still refused (22023)');
RESET ROLE;

-- ---------------------------------------------------------------------------------------------
-- What the writer wrote, seen as the owner (3)
-- ---------------------------------------------------------------------------------------------
SELECT results_eq($$SELECT r.rank, r.outcome_value, r.outcome_confidence, r.tip_followed_llm, a.passed
                      FROM stig.tip_retrievals AS r JOIN stig.attempts AS a ON a.id = r.attempt_id
                     WHERE r.run_id = 'run-w' ORDER BY r.rank$$,
                  $$VALUES (1, 1.0::float8, 1.0::float8, NULL::boolean, true), (2, 1.0::float8, 1.0::float8, NULL, true),
                           (3, 1.0::float8, 1.0::float8, NULL, true)$$,
                  'the writer''s calls logged, linked and graded its retrievals, with no follow verdict of its own');
SELECT results_eq($$SELECT r.outcome_value, a.passed FROM stig.tip_retrievals AS r JOIN stig.attempts AS a ON a.id = r.attempt_id
                     WHERE r.run_id = 'run-b'$$,
                  $$VALUES (0.0::float8, false)$$, 'the writer''s bulk ingest linked and graded its retrieval');
SELECT results_eq(format($$SELECT attempt_id, outcome_value FROM stig.tip_retrievals WHERE id = %s$$, :rid_o),
                  format($$VALUES (%s::bigint, 0.0::float8)$$, :att_o),
                  'the retrieval the writer tried to relink and regrade is unchanged');

-- ---------------------------------------------------------------------------------------------
-- A skill added later gets the same grants (4)
-- ---------------------------------------------------------------------------------------------
SELECT lives_ok($$SELECT ctxgraph.add_skill('k9', 'binary', 'Test skill.')$$, 'a third skill is added');
SELECT tests.make_tip('k9', 'K-1', 'K: a tip') AS tip_k \gset
SET LOCAL ROLE ctxgraph_writer;
SELECT lives_ok(format($$WITH run AS (INSERT INTO k9.runs (id) VALUES ('run-k'))
                         INSERT INTO k9.tip_retrievals (run_id, tip_id, rule_id, rank, similarity_score)
                         VALUES ('run-k', %s, 'K-1', 1, 0.5)$$, :tip_k),
                'k9: the writer opens a run and inserts what it logs');
SELECT throws_ok(format($$INSERT INTO k9.tip_retrievals (run_id, tip_id, rule_id, rank, tip_followed_llm)
                          VALUES ('run-k', %s, 'K-1', 2, true)$$, :tip_k),
                 '42501', 'permission denied for table tip_retrievals',
                 'k9: the writer''s own follow verdict is refused (42501)');
SELECT throws_ok($$UPDATE k9.tip_retrievals SET outcome_value = 1.0$$,
                 '42501', 'permission denied for table tip_retrievals',
                 'k9: the writer''s direct UPDATE of an outcome is refused (42501)');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
