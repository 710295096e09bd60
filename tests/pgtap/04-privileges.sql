-- Privileges both ways, per role, on the parents and on each skill's tables, then the same facts
-- seen from inside each role with SET LOCAL ROLE (the suite runs as a superuser).
--
--   writer   the agent's write path: SELECT the four tables, INSERT only the columns the write
--            path fills, UPDATE only a run's end, EXECUTE the write-path functions (which run with
--            their owner's rights and write results, links and outcomes); no DEF-27 columns, no
--            embeddings, timestamps or retirements, no DELETE.
--   scorer   SELECT the four tables; UPDATE only tip_followed_llm/emb/computed_at,
--            follow_probability and its cache tips.embedding.
--   ranker   SELECT tips (and the registries) only.
--   analyst  SELECT everything, write nothing.
BEGIN;
SELECT plan(217);

-- ---------------------------------------------------------------------------------------------
-- Schemas (15): USAGE only, never CREATE; nothing for PUBLIC.
-- ---------------------------------------------------------------------------------------------
SELECT schema_privs_are(s, r, CASE WHEN r = 'public' THEN '{}'::name[] ELSE ARRAY['USAGE']::name[] END,
                        format('%s has %s on schema %s', r, CASE WHEN r = 'public' THEN 'nothing' ELSE 'USAGE only' END, s))
  FROM unnest(ARRAY['ctxgraph', 'stig', 'cve']) AS s,
       unnest(ARRAY['ctxgraph_writer', 'ctxgraph_scorer', 'ctxgraph_ranker', 'ctxgraph_analyst', 'public']) AS r;

-- ---------------------------------------------------------------------------------------------
-- Table-level privileges on the four tables, parents and both skills (60).
-- Column-level UPDATEs are not table privileges; they are checked below.
-- ---------------------------------------------------------------------------------------------
CREATE TEMP TABLE expected_table_privs (role_name name, tbl name, privs name[], ord serial);
INSERT INTO expected_table_privs (role_name, tbl, privs) VALUES
    ('ctxgraph_writer',  'runs',           '{SELECT}'),
    ('ctxgraph_writer',  'attempts',       '{SELECT}'),
    ('ctxgraph_writer',  'tips',           '{SELECT}'),
    ('ctxgraph_writer',  'tip_retrievals', '{SELECT}'),
    ('ctxgraph_scorer',  'runs',           '{SELECT}'),
    ('ctxgraph_scorer',  'attempts',       '{SELECT}'),
    ('ctxgraph_scorer',  'tips',           '{SELECT}'),
    ('ctxgraph_scorer',  'tip_retrievals', '{SELECT}'),
    ('ctxgraph_ranker',  'runs',           '{}'),
    ('ctxgraph_ranker',  'attempts',       '{}'),
    ('ctxgraph_ranker',  'tips',           '{SELECT}'),
    ('ctxgraph_ranker',  'tip_retrievals', '{}'),
    ('ctxgraph_analyst', 'runs',           '{SELECT}'),
    ('ctxgraph_analyst', 'attempts',       '{SELECT}'),
    ('ctxgraph_analyst', 'tips',           '{SELECT}'),
    ('ctxgraph_analyst', 'tip_retrievals', '{SELECT}'),
    ('public',           'runs',           '{}'),
    ('public',           'attempts',       '{}'),
    ('public',           'tips',           '{}'),
    ('public',           'tip_retrievals', '{}');

SELECT table_privs_are(s.schema_name, e.tbl, e.role_name, e.privs,
                       format('%s has exactly {%s} on %s.%s', e.role_name, array_to_string(e.privs, ', '), s.schema_name, e.tbl))
  FROM (SELECT * FROM expected_table_privs ORDER BY ord) AS e
 CROSS JOIN (VALUES (1, 'ctxgraph'), (2, 'stig'), (3, 'cve')) AS s (n, schema_name);

-- ---------------------------------------------------------------------------------------------
-- Column-level grants, both ways (12): exactly these columns, for exactly these roles, on top of
-- the table-level privileges above. Nothing else is UPDATE-able by anyone; the writer INSERTs
-- by column, the columns the write path fills, so that it cannot set a verdict, an embedding, a
-- timestamp the database keeps, a retirement, a result, a link or an outcome.
-- ---------------------------------------------------------------------------------------------
SELECT set_eq(format('SELECT * FROM tests.column_only_privileges(%L)', s || '.runs'),
              $$VALUES ('ctxgraph_writer', 'skill', 'INSERT'), ('ctxgraph_writer', 'id', 'INSERT'),
                       ('ctxgraph_writer', 'started_at', 'INSERT'), ('ctxgraph_writer', 'ended_at', 'UPDATE')$$,
              format('%s.runs: the writer INSERTs the id and start and may UPDATE ended_at only; no other column grant', s))
  FROM unnest(ARRAY['ctxgraph', 'stig', 'cve']) AS s;

SELECT set_eq(format('SELECT * FROM tests.column_only_privileges(%L)', s || '.attempts'),
              $$SELECT 'ctxgraph_writer' AS role_name, c AS column_name, 'INSERT' AS privilege
                  FROM unnest(ARRAY['skill', 'run_id', 'rule_id', 'attempt_number', 'approach', 'started_at',
                                    'ended_at']) AS c$$,
              format('%s.attempts: the writer INSERTs all but the id and the result, UPDATEs nothing (record_outcome does); no other column grant', s))
  FROM unnest(ARRAY['ctxgraph', 'stig', 'cve']) AS s;

SELECT set_eq(format('SELECT * FROM tests.column_only_privileges(%L)', s || '.tips'),
              $$VALUES ('ctxgraph_writer', 'skill', 'INSERT'), ('ctxgraph_writer', 'rule_id', 'INSERT'),
                       ('ctxgraph_writer', 'body', 'INSERT'), ('ctxgraph_scorer', 'embedding', 'UPDATE')$$,
              format('%s.tips: the writer INSERTs the rule and body only; only the scorer may UPDATE, and only embedding (its cache); no other column grant', s))
  FROM unnest(ARRAY['ctxgraph', 'stig', 'cve']) AS s;

SELECT set_eq(format('SELECT * FROM tests.column_only_privileges(%L)', s || '.tip_retrievals'),
              $$SELECT 'ctxgraph_writer' AS role_name, c AS column_name, 'INSERT' AS privilege
                  FROM unnest(ARRAY['skill', 'run_id', 'tip_id', 'rule_id', 'rank', 'similarity_score',
                                    'retrieved_at']) AS c
                UNION ALL
                VALUES ('ctxgraph_scorer', 'tip_followed_llm', 'UPDATE'), ('ctxgraph_scorer', 'tip_followed_emb', 'UPDATE'),
                       ('ctxgraph_scorer', 'tip_followed_computed_at', 'UPDATE'),
                       ('ctxgraph_scorer', 'follow_probability', 'UPDATE')$$,
              format('%s.tip_retrievals: writer INSERTs what it logs and UPDATEs nothing, scorer the DEF-27 columns and follow_probability; nothing else', s))
  FROM unnest(ARRAY['ctxgraph', 'stig', 'cve']) AS s;

-- ---------------------------------------------------------------------------------------------
-- The same, column by column where it matters (38), with pgTAP's column_privs_are.
-- ---------------------------------------------------------------------------------------------
CREATE TEMP TABLE expected_column_privs (tbl name, col name, role_name name, privs name[], ord serial);
INSERT INTO expected_column_privs (tbl, col, role_name, privs) VALUES
    ('tip_retrievals', 'attempt_id',               'ctxgraph_writer',  '{SELECT}'),
    ('tip_retrievals', 'outcome_value',            'ctxgraph_writer',  '{SELECT}'),
    ('tip_retrievals', 'outcome_confidence',       'ctxgraph_writer',  '{SELECT}'),
    ('tip_retrievals', 'tip_followed_llm',         'ctxgraph_writer',  '{SELECT}'),
    ('tip_retrievals', 'tip_followed_emb',         'ctxgraph_writer',  '{SELECT}'),
    ('tip_retrievals', 'tip_followed_computed_at', 'ctxgraph_writer',  '{SELECT}'),
    ('tip_retrievals', 'tip_followed_llm',         'ctxgraph_scorer',  '{SELECT,UPDATE}'),
    ('tip_retrievals', 'tip_followed_emb',         'ctxgraph_scorer',  '{SELECT,UPDATE}'),
    ('tip_retrievals', 'tip_followed_computed_at', 'ctxgraph_scorer',  '{SELECT,UPDATE}'),
    ('tip_retrievals', 'follow_probability',       'ctxgraph_writer',  '{SELECT}'),
    ('tip_retrievals', 'follow_probability',       'ctxgraph_scorer',  '{SELECT,UPDATE}'),
    ('tip_retrievals', 'outcome_value',            'ctxgraph_scorer',  '{SELECT}'),
    ('tip_retrievals', 'attempt_id',               'ctxgraph_scorer',  '{SELECT}'),
    ('tip_retrievals', 'tip_id',                   'ctxgraph_ranker',  '{}'),
    ('tip_retrievals', 'outcome_value',            'ctxgraph_analyst', '{SELECT}'),
    ('tip_retrievals', 'tip_followed_llm',         'ctxgraph_analyst', '{SELECT}'),
    ('tips',           'embedding',                'ctxgraph_scorer',  '{SELECT,UPDATE}'),
    ('tips',           'body',                     'ctxgraph_scorer',  '{SELECT}'),
    ('tips',           'retired_at',               'ctxgraph_writer',  '{SELECT}');

SELECT column_privs_are(s.schema_name, e.tbl, e.col, e.role_name, e.privs,
                        format('%s has exactly {%s} on %s.%s.%s', e.role_name, array_to_string(e.privs, ', '),
                               s.schema_name, e.tbl, e.col))
  FROM (SELECT * FROM expected_column_privs ORDER BY ord) AS e
 CROSS JOIN (VALUES (1, 'stig'), (2, 'cve')) AS s (n, schema_name);

-- ---------------------------------------------------------------------------------------------
-- Shared tables and sequences (28)
-- ---------------------------------------------------------------------------------------------
SELECT table_privs_are('ctxgraph', t, r, ARRAY['SELECT']::name[], format('%s may only read ctxgraph.%s', r, t))
  FROM unnest(ARRAY['parameters', 'skills', 'failure_modes']) AS t,
       unnest(ARRAY['ctxgraph_writer', 'ctxgraph_scorer', 'ctxgraph_ranker', 'ctxgraph_analyst']) AS r;

SELECT table_privs_are('ctxgraph', 'skill_views', r,
                       CASE WHEN r = 'ctxgraph_analyst' THEN ARRAY['SELECT'] ELSE '{}' END::name[],
                       format('%s has %s on ctxgraph.skill_views', r, CASE WHEN r = 'ctxgraph_analyst' THEN 'SELECT only' ELSE 'nothing' END))
  FROM unnest(ARRAY['ctxgraph_writer', 'ctxgraph_scorer', 'ctxgraph_ranker', 'ctxgraph_analyst']) AS r;

SELECT sequence_privs_are('ctxgraph', q, r,
                          CASE WHEN r = 'ctxgraph_writer' THEN ARRAY['USAGE'] ELSE '{}' END::name[],
                          format('%s has %s on sequence ctxgraph.%s', r, CASE WHEN r = 'ctxgraph_writer' THEN 'USAGE only' ELSE 'nothing' END, q))
  FROM unnest(ARRAY['attempts_id_seq', 'tips_id_seq', 'tip_retrievals_id_seq']) AS q,
       unnest(ARRAY['ctxgraph_writer', 'ctxgraph_scorer', 'ctxgraph_analyst', 'public']) AS r;

-- ---------------------------------------------------------------------------------------------
-- Functions (37): the write path for the writer only; the pure functions for every role;
-- the provisioning functions for nobody but their owner.
-- ---------------------------------------------------------------------------------------------
CREATE TEMP TABLE write_path (fn name, args name[], ord serial);
INSERT INTO write_path (fn, args) VALUES
    ('save_attempt',                 '{text,text,text,integer,text,timestamptz,timestamptz}'),
    ('log_retrievals',               '{text,text,text,bigint[],double precision[],timestamptz}'),
    ('update_retrieval_attempt_ids', '{text,bigint[],bigint}'),
    ('record_outcome',               '{text,bigint,boolean,text,timestamptz}');

SELECT function_privs_are('ctxgraph', w.fn, w.args, r.role_name,
                          CASE WHEN r.role_name = 'ctxgraph_writer' THEN ARRAY['EXECUTE'] ELSE '{}' END::name[],
                          format('%s %s execute ctxgraph.%s', r.role_name,
                                 CASE WHEN r.role_name = 'ctxgraph_writer' THEN 'may' ELSE 'may not' END, w.fn))
  FROM (SELECT * FROM write_path ORDER BY ord) AS w
 CROSS JOIN (VALUES (1, 'ctxgraph_writer'), (2, 'ctxgraph_scorer'), (3, 'ctxgraph_ranker'),
                    (4, 'ctxgraph_analyst'), (5, 'public')) AS r (n, role_name);

SELECT function_privs_are('ctxgraph', f.fn, f.args, r, ARRAY['EXECUTE']::name[],
                          format('%s may execute ctxgraph.%s', r, f.fn))
  FROM (VALUES (1, 'graded_outcome'::name, '{text,boolean,integer,text}'::name[]), (2, 'param', '{text}')) AS f (n, fn, args),
       unnest(ARRAY['ctxgraph_writer', 'ctxgraph_scorer', 'ctxgraph_ranker', 'ctxgraph_analyst']) AS r;

SELECT function_privs_are('ctxgraph', f.fn, f.args, r, '{}'::name[],
                          format('%s may not execute ctxgraph.%s', r, f.fn))
  FROM (VALUES (1, 'add_skill'::name, '{text,text,text}'::name[]), (2, 'drop_skill', '{text}'),
               (3, 'sync_skill_privileges', '{text}')) AS f (n, fn, args),
       unnest(ARRAY['ctxgraph_writer', 'ctxgraph_analyst', 'public']) AS r;

-- ---------------------------------------------------------------------------------------------
-- Behaviour (27): the same rules from inside each role. Rows are built as the superuser first.
-- ---------------------------------------------------------------------------------------------
SELECT tests.make_tip('stig', 'V-230221', 'A: set PASS_MAX_DAYS 60 in /etc/login.defs') AS tip_a \gset
SELECT tests.make_attempt_with_retrievals('stig', 'run-p', 'V-230221', 1, ARRAY[:tip_a]::bigint[], false, 'clean_failure') AS att_p \gset

-- The statement triggers that keep ctxgraph.tip_stats run as the owner, so each role's own
-- privileges are enough to write through the log.

-- The scorer (9)
SET LOCAL ROLE ctxgraph_scorer;
SELECT throws_ok(format($$UPDATE stig.tip_retrievals SET outcome_value = 1.0 WHERE attempt_id = %s$$, :att_p),
                 '42501', 'permission denied for table tip_retrievals',
                 'scorer: UPDATE of outcome_value is refused (42501)');
SELECT throws_ok(format($$UPDATE stig.tip_retrievals SET attempt_id = NULL WHERE attempt_id = %s$$, :att_p),
                 '42501', 'permission denied for table tip_retrievals',
                 'scorer: UPDATE of attempt_id is refused (42501)');
SELECT lives_ok(format($$UPDATE stig.tip_retrievals
                            SET tip_followed_llm = true, tip_followed_emb = 0.72,
                                tip_followed_computed_at = '2026-11-29 12:00:00+00'
                          WHERE attempt_id = %s$$, :att_p),
                'scorer: UPDATE of the three DEF-27 columns on stig.tip_retrievals works');
SELECT lives_ok(format($$UPDATE ctxgraph.tip_retrievals SET tip_followed_llm = false WHERE skill = 'stig' AND attempt_id = %s$$, :att_p),
                'scorer: the same UPDATE through the parent ctxgraph.tip_retrievals works');
SELECT lives_ok(format($$UPDATE stig.tips SET embedding = array_fill(0.05, ARRAY[384])::real[]::vector WHERE id = %s$$, :tip_a),
                'scorer: UPDATE of tips.embedding (its cache) works');
SELECT throws_ok(format($$UPDATE stig.tips SET body = 'rewritten' WHERE id = %s$$, :tip_a),
                 '42501', 'permission denied for table tips', 'scorer: UPDATE of tips.body is refused (42501)');
SELECT throws_ok($$DELETE FROM stig.tip_retrievals$$,
                 '42501', 'permission denied for table tip_retrievals', 'scorer: DELETE is refused (42501)');
SELECT throws_ok($$INSERT INTO stig.runs (id) VALUES ('run-scorer')$$,
                 '42501', 'permission denied for table runs', 'scorer: INSERT is refused (42501)');
SELECT throws_ok(format($$SELECT ctxgraph.record_outcome('stig', %s, true)$$, :att_p),
                 '42501', 'permission denied for function record_outcome', 'scorer: the write path is refused (42501)');
RESET ROLE;

-- The writer (8). Each call is wrapped in lives_ok so that one refusal is one failed test; what
-- the calls wrote is checked as the superuser below.
SET LOCAL ROLE ctxgraph_writer;
SELECT lives_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-w', 'V-230221', ARRAY[%s]::bigint[],
                                                        ARRAY[0.6], '2026-11-29 12:00:00+00')$$, :tip_a),
                'writer: log_retrievals works');
SELECT lives_ok($$SELECT ctxgraph.save_attempt('stig', 'run-w', 'V-230221', 1, NULL,
                                               '2026-11-29 12:00:01+00', '2026-11-29 12:05:00+00')$$,
                'writer: save_attempt works');
SELECT lives_ok($$SELECT ctxgraph.update_retrieval_attempt_ids('stig',
                      (SELECT array_agg(id) FROM stig.tip_retrievals WHERE run_id = 'run-w'),
                      (SELECT id FROM stig.attempts WHERE run_id = 'run-w'))$$,
                'writer: update_retrieval_attempt_ids works');
SELECT lives_ok($$SELECT ctxgraph.record_outcome('stig', (SELECT id FROM stig.attempts WHERE run_id = 'run-w'), true)$$,
                'writer: record_outcome works');
SELECT throws_ok(format($$UPDATE stig.tip_retrievals SET tip_followed_llm = true WHERE attempt_id = %s$$, :att_p),
                 '42501', 'permission denied for table tip_retrievals',
                 'writer: UPDATE of a DEF-27 column is refused (42501)');
SELECT throws_ok($$DELETE FROM stig.attempts WHERE run_id = 'run-p'$$,
                 '42501', 'permission denied for table attempts', 'writer: DELETE is refused (42501)');
SELECT throws_ok(format($$UPDATE stig.tips SET retired_at = '2026-11-29 13:00:00+00' WHERE id = %s$$, :tip_a),
                 '42501', 'permission denied for table tips', 'writer: retiring a tip is refused (42501)');
SELECT throws_ok($$SELECT ctxgraph.add_skill('k9', 'binary')$$,
                 '42501', 'permission denied for function add_skill', 'writer: add_skill is refused (42501)');
RESET ROLE;

-- The ranker (3)
SET LOCAL ROLE ctxgraph_ranker;
SELECT results_eq(format($$SELECT body FROM stig.tips WHERE id = %s$$, :tip_a),
                  $$VALUES ('A: set PASS_MAX_DAYS 60 in /etc/login.defs')$$,
                  'ranker: reads stig.tips');
SELECT throws_ok($$SELECT count(*) FROM stig.tip_retrievals$$,
                 '42501', 'permission denied for table tip_retrievals', 'ranker: reading the retrieval log is refused (42501)');
SELECT throws_ok($$SELECT count(*) FROM ctxgraph.attempts$$,
                 '42501', 'permission denied for table attempts', 'ranker: reading attempts is refused (42501)');
RESET ROLE;

-- The analyst (5)
SET LOCAL ROLE ctxgraph_analyst;
SELECT results_eq($$SELECT (SELECT count(*) FROM stig.runs WHERE id = 'run-p'),
                           (SELECT count(*) FROM stig.attempts WHERE run_id = 'run-p'),
                           (SELECT count(*) FROM stig.tip_retrievals WHERE run_id = 'run-p'),
                           (SELECT count(*) FROM stig.tips WHERE id = (SELECT tip_id FROM stig.tip_retrievals WHERE run_id = 'run-p'))$$,
                  $$VALUES (1::bigint, 1::bigint, 1::bigint, 1::bigint)$$,
                  'analyst: reads runs, attempts, retrievals and tips');
SELECT is(ctxgraph.graded_outcome('stig', true, 2), 0.8::double precision, 'analyst: may call graded_outcome');
SELECT throws_ok(format($$UPDATE stig.tip_retrievals SET tip_followed_llm = true WHERE attempt_id = %s$$, :att_p),
                 '42501', 'permission denied for table tip_retrievals', 'analyst: UPDATE is refused (42501)');
SELECT throws_ok($$INSERT INTO cve.runs (id) VALUES ('run-analyst')$$,
                 '42501', 'permission denied for table runs', 'analyst: INSERT is refused (42501)');
SELECT throws_ok($$SELECT ctxgraph.save_attempt('stig', 'run-analyst', 'V-230221', 1)$$,
                 '42501', 'permission denied for function save_attempt', 'analyst: the write path is refused (42501)');
RESET ROLE;

-- What the roles did, seen as the superuser (2).
SELECT results_eq($$SELECT r.rank, r.similarity_score, r.outcome_value, r.outcome_confidence, a.passed, a.attempt_number
                      FROM stig.tip_retrievals AS r JOIN stig.attempts AS a ON a.id = r.attempt_id
                     WHERE r.run_id = 'run-w'$$,
                  $$VALUES (1, 0.6::double precision, 1.0::double precision, 1.0::double precision, true, 1)$$,
                  'the writer''s calls logged, linked and scored its retrieval (a first-try pass: 1.0)');
SELECT results_eq(format($$SELECT tip_followed_llm, tip_followed_emb, tip_followed_computed_at, outcome_value
                             FROM stig.tip_retrievals WHERE attempt_id = %s$$, :att_p),
                  $$VALUES (false, 0.72::double precision, '2026-11-29 12:00:00+00'::timestamptz, 0.0::double precision)$$,
                  'the scorer''s DEF-27 writes landed and the outcome it could not touch is unchanged');

SELECT * FROM finish();
ROLLBACK;
