-- The schema as a contract: schemas, the four skill-partitioned tables (parents in ctxgraph, one
-- real table per skill), their columns, types, nullability, defaults and keys, the skills registry,
-- plain INSERTs that name only contract columns, and a third skill added by ctxgraph.add_skill.
BEGIN;
SELECT plan(282);

-- ---------------------------------------------------------------------------------------------
-- Schemas and extension (4)
-- ---------------------------------------------------------------------------------------------
SELECT has_schema('ctxgraph', 'schema ctxgraph holds the shared objects');
SELECT has_schema('stig', 'schema stig holds the stig skill''s tables');
SELECT has_schema('cve', 'schema cve holds the cve skill''s tables');
SELECT has_extension('vector', 'extension vector (pgvector) is installed');

-- ---------------------------------------------------------------------------------------------
-- Parents and partitions (16): one parent per table in ctxgraph, list-partitioned by skill, with
-- exactly one partition per registered skill in the skill's schema.
-- ---------------------------------------------------------------------------------------------
SELECT is_partitioned('ctxgraph', t, format('ctxgraph.%s is a partitioned parent table', t))
  FROM unnest(ARRAY['runs', 'attempts', 'tips', 'tip_retrievals']) AS t;

SELECT partitions_are('ctxgraph', t, ARRAY['stig.' || t, 'cve.' || t]::name[],
                      format('ctxgraph.%s has exactly the partitions stig.%s and cve.%s', t, t, t))
  FROM unnest(ARRAY['runs', 'attempts', 'tips', 'tip_retrievals']) AS t;

SELECT is_partition_of(s, t, 'ctxgraph', t, format('%s.%s is a partition of ctxgraph.%s', s, t, t))
  FROM unnest(ARRAY['stig', 'cve']) AS s, unnest(ARRAY['runs', 'attempts', 'tips', 'tip_retrievals']) AS t;

-- ---------------------------------------------------------------------------------------------
-- Exact column lists (12): each skill's tables and the parents, DEF-27 columns included.
-- ---------------------------------------------------------------------------------------------
SELECT columns_are(s, 'runs', ARRAY['skill', 'id', 'started_at', 'ended_at'],
                   format('%s.runs has exactly the contract columns', s))
  FROM unnest(ARRAY['ctxgraph', 'stig', 'cve']) AS s;

SELECT columns_are(s, 'attempts',
                   ARRAY['skill', 'id', 'run_id', 'rule_id', 'attempt_number', 'passed', 'failure_mode',
                         'approach', 'started_at', 'ended_at'],
                   format('%s.attempts has exactly the contract columns', s))
  FROM unnest(ARRAY['ctxgraph', 'stig', 'cve']) AS s;

SELECT columns_are(s, 'tips',
                   ARRAY['skill', 'id', 'rule_id', 'body', 'embedding', 'created_at', 'retired_at'],
                   format('%s.tips has exactly the contract columns', s))
  FROM unnest(ARRAY['ctxgraph', 'stig', 'cve']) AS s;

SELECT columns_are(s, 'tip_retrievals',
                   ARRAY['skill', 'id', 'run_id', 'attempt_id', 'tip_id', 'rule_id', 'rank',
                         'similarity_score', 'outcome_value', 'outcome_confidence', 'retrieved_at',
                         'tip_followed_llm', 'tip_followed_emb', 'tip_followed_computed_at', 'follow_probability'],
                   format('%s.tip_retrievals has exactly the ADR columns, the three DEF-27 columns and follow_probability', s))
  FROM unnest(ARRAY['ctxgraph', 'stig', 'cve']) AS s;

-- ---------------------------------------------------------------------------------------------
-- Types and nullability of every column, both skills (36 columns x 2 skills x 2 = 144).
-- One row per column: (table, column, type, NOT NULL?).
-- ---------------------------------------------------------------------------------------------
CREATE TEMP TABLE contract_columns (tbl name, col name, typ text, not_null boolean, ord serial);
INSERT INTO contract_columns (tbl, col, typ, not_null) VALUES
    ('runs',           'skill',                    'text',                     true),
    ('runs',           'id',                       'text',                     true),
    ('runs',           'started_at',               'timestamp with time zone', true),
    ('runs',           'ended_at',                 'timestamp with time zone', false),
    ('attempts',       'skill',                    'text',                     true),
    ('attempts',       'id',                       'bigint',                   true),
    ('attempts',       'run_id',                   'text',                     true),
    ('attempts',       'rule_id',                  'text',                     true),
    ('attempts',       'attempt_number',           'integer',                  true),
    ('attempts',       'passed',                   'boolean',                  false),
    ('attempts',       'failure_mode',             'text',                     false),
    ('attempts',       'approach',                 'text',                     false),
    ('attempts',       'started_at',               'timestamp with time zone', false),
    ('attempts',       'ended_at',                 'timestamp with time zone', false),
    ('tips',           'skill',                    'text',                     true),
    ('tips',           'id',                       'bigint',                   true),
    ('tips',           'rule_id',                  'text',                     false),
    ('tips',           'body',                     'text',                     true),
    ('tips',           'embedding',                'vector(384)',              false),
    ('tips',           'created_at',               'timestamp with time zone', true),
    ('tips',           'retired_at',               'timestamp with time zone', false),
    ('tip_retrievals', 'skill',                    'text',                     true),
    ('tip_retrievals', 'id',                       'bigint',                   true),
    ('tip_retrievals', 'run_id',                   'text',                     true),
    ('tip_retrievals', 'attempt_id',               'bigint',                   false),
    ('tip_retrievals', 'tip_id',                   'bigint',                   true),
    ('tip_retrievals', 'rule_id',                  'text',                     true),
    ('tip_retrievals', 'rank',                     'integer',                  true),
    ('tip_retrievals', 'similarity_score',         'double precision',         false),
    ('tip_retrievals', 'outcome_value',            'double precision',         false),
    ('tip_retrievals', 'outcome_confidence',       'double precision',         false),
    ('tip_retrievals', 'retrieved_at',             'timestamp with time zone', true),
    ('tip_retrievals', 'tip_followed_llm',         'boolean',                  false),
    ('tip_retrievals', 'tip_followed_emb',         'double precision',         false),
    ('tip_retrievals', 'tip_followed_computed_at', 'timestamp with time zone', false),
    ('tip_retrievals', 'follow_probability',       'double precision',         false);

SELECT col_type_is(s.skill, c.tbl, c.col, c.typ, format('%s.%s.%s is %s', s.skill, c.tbl, c.col, c.typ))
  FROM (SELECT * FROM contract_columns ORDER BY ord) AS c
 CROSS JOIN (VALUES (1, 'stig'), (2, 'cve')) AS s (n, skill);

SELECT CASE WHEN c.not_null
            THEN col_not_null(s.skill, c.tbl, c.col, format('%s.%s.%s is NOT NULL', s.skill, c.tbl, c.col))
            ELSE col_is_null(s.skill, c.tbl, c.col, format('%s.%s.%s is nullable', s.skill, c.tbl, c.col))
       END
  FROM (SELECT * FROM contract_columns ORDER BY ord) AS c
 CROSS JOIN (VALUES (1, 'stig'), (2, 'cve')) AS s (n, skill);

-- ---------------------------------------------------------------------------------------------
-- Defaults (14): skill defaults to the partition's own skill; ids come from one shared sequence
-- per table, so an id is unique across skills.
-- ---------------------------------------------------------------------------------------------
SELECT col_default_is(s, t, 'skill', s, format('%s.%s.skill defaults to %L', s, t, s))
  FROM unnest(ARRAY['stig', 'cve']) AS s, unnest(ARRAY['runs', 'attempts', 'tips', 'tip_retrievals']) AS t;

SELECT col_default_is(s, t, 'id', format('nextval(''ctxgraph.%s_id_seq''::regclass)', t),
                      format('%s.%s.id defaults to the shared sequence ctxgraph.%s_id_seq', s, t, t))
  FROM unnest(ARRAY['stig', 'cve']) AS s, unnest(ARRAY['attempts', 'tips', 'tip_retrievals']) AS t;

-- ---------------------------------------------------------------------------------------------
-- Keys (15): primary keys (skill, id) on parents and partitions; one attempt per run, rule and number.
-- ---------------------------------------------------------------------------------------------
SELECT col_is_pk(s, t, ARRAY['skill', 'id']::name[], format('%s.%s has primary key (skill, id)', s, t))
  FROM unnest(ARRAY['ctxgraph', 'stig', 'cve']) AS s, unnest(ARRAY['runs', 'attempts', 'tips', 'tip_retrievals']) AS t;

SELECT col_is_unique(s, 'attempts', ARRAY['skill', 'run_id', 'rule_id', 'attempt_number']::name[],
                     format('%s.attempts is unique on (skill, run_id, rule_id, attempt_number)', s))
  FROM unnest(ARRAY['ctxgraph', 'stig', 'cve']) AS s;

-- ---------------------------------------------------------------------------------------------
-- Foreign keys (8). fk_ok cannot see keys between partitioned tables in pgTAP 1.2.0 (see
-- tests.foreign_keys), so the constraints are read from pg_constraint. Keys carry skill, so a row
-- can only reference a row of its own skill.
-- ---------------------------------------------------------------------------------------------
SELECT set_eq($$SELECT * FROM tests.foreign_keys('ctxgraph.runs')$$,
              $$VALUES ('skill', 'ctxgraph.skills', 'name')$$,
              'ctxgraph.runs references only the skills registry');

SELECT set_eq($$SELECT * FROM tests.foreign_keys('ctxgraph.attempts')$$,
              $$VALUES ('skill', 'ctxgraph.skills', 'name'),
                       ('skill, run_id', 'ctxgraph.runs', 'skill, id'),
                       ('failure_mode', 'ctxgraph.failure_modes', 'name')$$,
              'ctxgraph.attempts references skills, runs (skill, id) and failure_modes');

SELECT set_eq($$SELECT * FROM tests.foreign_keys('ctxgraph.tips')$$,
              $$VALUES ('skill', 'ctxgraph.skills', 'name')$$,
              'ctxgraph.tips references only the skills registry');

-- The log's keys into runs, attempts and tips are each skill's own, between its partitions (a check
-- through the referenced parent costs several times more). The parent holds none: a key into the
-- skills registry is implied by the one into the skill's tips, whose own key holds the registry.
SELECT is_empty($$SELECT * FROM tests.foreign_keys('ctxgraph.tip_retrievals')$$,
                'ctxgraph.tip_retrievals itself references nothing: its partitions hold the keys');

SELECT set_eq(format('SELECT * FROM tests.foreign_keys(%L)', s || '.tip_retrievals'),
              format($$VALUES ('skill, run_id', %L, 'skill, id'),
                              ('skill, attempt_id', %L, 'skill, id'),
                              ('skill, tip_id', %L, 'skill, id')$$, s || '.runs', s || '.attempts', s || '.tips'),
              format('%s.tip_retrievals references its own skill''s runs, attempts and tips by (skill, id)', s))
  FROM unnest(ARRAY['stig', 'cve']) AS s;

SELECT set_eq(format('SELECT * FROM tests.foreign_keys(%L)', s || '.attempts'),
              $$VALUES ('skill', 'ctxgraph.skills', 'name'),
                       ('skill, run_id', 'ctxgraph.runs', 'skill, id'),
                       ('failure_mode', 'ctxgraph.failure_modes', 'name')$$,
              format('%s.attempts inherits the parent''s foreign keys', s))
  FROM unnest(ARRAY['stig', 'cve']) AS s;

-- ---------------------------------------------------------------------------------------------
-- Registries (2)
-- ---------------------------------------------------------------------------------------------
SELECT results_eq($$SELECT name, grading FROM ctxgraph.skills ORDER BY name$$,
                  $$VALUES ('cve', 'binary'), ('stig', 'graded')$$,
                  'the skills registry holds stig (graded) and cve (binary)');

SELECT results_eq($$SELECT name, outcome_parameter, is_harm FROM ctxgraph.failure_modes ORDER BY name$$,
                  $$VALUES ('clean_failure', 'outcome.fail.clean_failure', false),
                           ('evaluator_gap', 'outcome.fail.evaluator_gap', false),
                           ('health_failure', 'outcome.fail.health_failure', true)$$,
                  'three failure modes, only health_failure counts as harm');

-- ---------------------------------------------------------------------------------------------
-- Plain INSERTs naming only contract columns (12): defaults fill skill and id.
-- ---------------------------------------------------------------------------------------------
SELECT lives_ok($$INSERT INTO stig.runs (id) VALUES ('run-plain')$$,
                'INSERT INTO stig.runs (id) works without naming skill');
SELECT lives_ok($$INSERT INTO stig.tips (rule_id, body) VALUES ('V-230221', 'Set PASS_MAX_DAYS to 60.')$$,
                'INSERT INTO stig.tips (rule_id, body) works without naming skill or id');
SELECT lives_ok($$INSERT INTO stig.attempts (run_id, rule_id, attempt_number) VALUES ('run-plain', 'V-230221', 1)$$,
                'INSERT INTO stig.attempts (run_id, rule_id, attempt_number) works without naming skill or id');
SELECT lives_ok($$INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, similarity_score)
                  SELECT 'run-plain', t.id, 'V-230221', 1, 0.9 FROM stig.tips AS t
                   WHERE t.body = 'Set PASS_MAX_DAYS to 60.'$$,
                'INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, similarity_score) works without naming skill or id');

SELECT results_eq($$SELECT skill, id FROM stig.runs WHERE id = 'run-plain'$$,
                  $$VALUES ('stig', 'run-plain')$$,
                  'the plain stig.runs row got skill stig');
SELECT results_eq($$SELECT skill, id = currval('ctxgraph.tips_id_seq'), rule_id, embedding IS NULL, retired_at IS NULL
                      FROM stig.tips WHERE body = 'Set PASS_MAX_DAYS to 60.'$$,
                  $$VALUES ('stig', true, 'V-230221', true, true)$$,
                  'the plain stig.tips row got skill stig and an id from ctxgraph.tips_id_seq, no embedding, not retired');
SELECT results_eq($$SELECT skill, id = currval('ctxgraph.attempts_id_seq'), passed, failure_mode
                      FROM stig.attempts WHERE run_id = 'run-plain'$$,
                  $$VALUES ('stig', true, NULL::boolean, NULL::text)$$,
                  'the plain stig.attempts row got skill stig and an id, no verdict yet');
SELECT results_eq($$SELECT skill, id = currval('ctxgraph.tip_retrievals_id_seq'), attempt_id, outcome_value,
                           tip_followed_llm, tip_followed_emb, tip_followed_computed_at
                      FROM stig.tip_retrievals WHERE run_id = 'run-plain'$$,
                  $$VALUES ('stig', true, NULL::bigint, NULL::double precision,
                            NULL::boolean, NULL::double precision, NULL::timestamptz)$$,
                  'the plain stig.tip_retrievals row got skill stig and an id; attempt, outcome and DEF-27 columns start NULL');
-- No key of the log names the registry: its rows hold their skill there through their tips.
SELECT throws_ok($$DELETE FROM ctxgraph.skills WHERE name = 'stig'$$, '23503', NULL,
                 'a skill with tips and log rows cannot leave the registry');

SELECT lives_ok($$INSERT INTO cve.tips (body) VALUES ('Upgrade openssl to the fixed release.')$$,
                'INSERT INTO cve.tips (body) works: rule_id may be NULL for a general tip');
SELECT results_eq($$SELECT skill, rule_id FROM cve.tips WHERE body = 'Upgrade openssl to the fixed release.'$$,
                  $$VALUES ('cve', NULL::text)$$,
                  'the plain cve.tips row got skill cve');
SELECT throws_ok($$INSERT INTO stig.tips (skill, body) VALUES ('cve', 'Wrong schema.')$$,
                 '23514', NULL,
                 'a cve row cannot be written into stig.tips (partition constraint, 23514)');

-- ---------------------------------------------------------------------------------------------
-- A third skill (18): add_skill creates the same tables with the same columns and privileges.
-- Rolled back with the rest of the test.
-- ---------------------------------------------------------------------------------------------
SELECT lives_ok($$SELECT ctxgraph.add_skill('k9', 'binary', 'Test skill.')$$,
                'ctxgraph.add_skill(''k9'', ''binary'') runs');
SELECT has_schema('k9', 'add_skill created schema k9');
SELECT results_eq($$SELECT grading FROM ctxgraph.skills WHERE name = 'k9'$$,
                  $$VALUES ('binary')$$,
                  'k9 is registered as binary');

SELECT is_partition_of('k9', t, 'ctxgraph', t, format('k9.%s is a partition of ctxgraph.%s', t, t))
  FROM unnest(ARRAY['runs', 'attempts', 'tips', 'tip_retrievals']) AS t;

SELECT set_eq(format('SELECT * FROM tests.table_shape(%L)', 'k9.' || t),
              format('SELECT * FROM tests.table_shape(%L)', 'stig.' || t),
              format('k9.%s has the same columns, types and nullability as stig.%s', t, t))
  FROM unnest(ARRAY['runs', 'attempts', 'tips', 'tip_retrievals']) AS t;

-- The maintained levels are updated in place by every write: their partitions, the new skill's
-- and the existing ones', leave room on each page (fillfactor 85) for HOT updates (13).
SELECT is((SELECT c.reloptions FROM pg_catalog.pg_class AS c WHERE c.oid = format('%s.%s', s, t)::regclass),
          ARRAY['fillfactor=85'], format('%s.%s has fillfactor 85', s, t))
  FROM unnest(ARRAY['k9', 'stig']) AS s,
       unnest(ARRAY['tip_stats', 'tip_attempt_stats', 'tip_rule_stats', 'tip_run_stats', 'rule_attempt_stats',
                    'rule_stats']) AS t;
SELECT is((SELECT c.reloptions FROM pg_catalog.pg_class AS c WHERE c.oid = 'k9.tip_retrievals'::regclass), NULL,
          'k9.tip_retrievals keeps the default fillfactor');

-- Rows written before the fillfactor was set (an upgrade's levels, rebuilt by an earlier change)
-- sit on full pages where no update is HOT; ensure_skill_partitions rewrites them at its fillfactor.
ALTER TABLE k9.rule_stats RESET (fillfactor);
INSERT INTO k9.rule_stats (skill, rule_id, attempts, outcome_sum, harmful_attempts)
SELECT 'k9', 'rule-' || lpad(g::text, 5, '0'), 1, 0.5, 0 FROM generate_series(1, 3000) AS g;
UPDATE k9.rule_stats SET attempts = attempts + 1 WHERE (ctid::text::point)[0] = 0;
SELECT ok((SELECT x.n_tup_upd > 50 AND x.n_tup_hot_upd <= 1 FROM pg_catalog.pg_stat_xact_user_tables AS x
            WHERE x.relid = 'k9.rule_stats'::regclass),
          'the premise: updates of every row of a full page written at the default fillfactor are not HOT');
CREATE TEMP TABLE hot_before ON COMMIT DROP AS
SELECT x.n_tup_hot_upd FROM pg_catalog.pg_stat_xact_user_tables AS x WHERE x.relid = 'k9.rule_stats'::regclass;
SELECT lives_ok($$SELECT ctxgraph.ensure_skill_partitions('k9')$$,
                'ensure_skill_partitions gives the filled partition its fillfactor back');
UPDATE k9.rule_stats SET attempts = attempts + 1
 WHERE rule_id IN (SELECT r.rule_id FROM k9.rule_stats AS r WHERE (r.ctid::text::point)[0] = 0 ORDER BY r.rule_id LIMIT 10);
SELECT is((SELECT x.n_tup_hot_upd - b.n_tup_hot_upd FROM pg_catalog.pg_stat_xact_user_tables AS x, hot_before AS b
            WHERE x.relid = 'k9.rule_stats'::regclass),
          10::bigint, 'and rewrote its rows: 10 updates of rows of its first page are all HOT');
SELECT is((SELECT bool_or(i.indisclustered) FROM pg_catalog.pg_index AS i WHERE i.indrelid = 'k9.rule_stats'::regclass),
          false, 'the rewrite leaves no clustering mark on the partition');

SELECT set_eq(format('SELECT * FROM tests.table_grants(%L)', 'k9.' || t),
              format('SELECT * FROM tests.table_grants(%L)', 'stig.' || t),
              format('k9.%s has the same table and column privileges as stig.%s', t, t))
  FROM unnest(ARRAY['runs', 'attempts', 'tips', 'tip_retrievals']) AS t;

SELECT set_eq($$SELECT pg_get_userbyid(x.grantee), x.privilege_type
                  FROM pg_namespace AS n, aclexplode(n.nspacl) AS x
                 WHERE n.nspname = 'k9' AND x.grantee <> n.nspowner$$,
              $$SELECT pg_get_userbyid(x.grantee), x.privilege_type
                  FROM pg_namespace AS n, aclexplode(n.nspacl) AS x
                 WHERE n.nspname = 'stig' AND x.grantee <> n.nspowner$$,
              'schema k9 grants the same privileges as schema stig');

SELECT lives_ok($$INSERT INTO k9.tips (body) VALUES ('A k9 tip.')$$,
                'INSERT INTO k9.tips (body) works');
SELECT results_eq($$SELECT skill FROM ctxgraph.tips WHERE body = 'A k9 tip.'$$,
                  $$VALUES ('k9')$$,
                  'the k9 row got skill k9 and is visible through the parent');

-- ---------------------------------------------------------------------------------------------
-- Keys between a skill's partitions (13), the maintained levels' and the log's: declared between
-- each skill's partitions, the new skill's too, none on the parents (a check through the
-- referenced parent costs several times more).
-- ---------------------------------------------------------------------------------------------
SELECT set_eq(format($q$SELECT t, k.* FROM unnest(ARRAY['tip_stats', 'tip_attempt_stats', 'tip_rule_stats', 'tip_run_stats']) AS t,
                              tests.foreign_keys(format('%%I.%%I', %L, t)::regclass) AS k$q$, s),
              format($q$SELECT t, 'skill, tip_id' AS columns, %L AS references_table, 'skill, id' AS references_columns
                          FROM unnest(ARRAY['tip_stats', 'tip_attempt_stats', 'tip_rule_stats', 'tip_run_stats']) AS t$q$,
                     s || '.tips'),
              format('each maintained level of %s references %s.tips (skill, id) and nothing else', s, s))
  FROM unnest(ARRAY['stig', 'cve', 'k9']) AS s;
SELECT is_empty($$SELECT c.conname FROM pg_constraint AS c
                   WHERE c.contype = 'f' AND c.conrelid IN ('ctxgraph.tip_stats'::regclass, 'ctxgraph.tip_attempt_stats'::regclass,
                                                            'ctxgraph.tip_rule_stats'::regclass, 'ctxgraph.tip_run_stats'::regclass)$$,
                'the parents of the maintained levels hold no foreign key');
SELECT is(count(*) FILTER (WHERE c.confdeltype = 'c'), 12::bigint,
          'every level key deletes its rows with their tip (ON DELETE CASCADE)')
  FROM pg_constraint AS c
 WHERE c.contype = 'f' AND c.conparentid = 0
   AND c.conname IN ('tip_stats_skill_tip_id_fkey', 'tip_attempt_stats_skill_tip_id_fkey',
                     'tip_rule_stats_skill_tip_id_fkey', 'tip_run_stats_skill_tip_id_fkey')
   AND c.connamespace IN ('stig'::regnamespace, 'cve'::regnamespace, 'k9'::regnamespace);
SELECT throws_ok($$INSERT INTO ctxgraph.tip_run_stats (skill, tip_id, run_id, units)
                   SELECT 'k9', t.id, 'no-such-run', 1 FROM stig.tips AS t LIMIT 1$$,
                 '23503', NULL, 'a k9 level row cannot name a stig tip (23503)');
SELECT set_eq($$SELECT * FROM tests.foreign_keys('k9.tip_retrievals')$$,
              $$VALUES ('skill, run_id', 'k9.runs', 'skill, id'), ('skill, attempt_id', 'k9.attempts', 'skill, id'),
                       ('skill, tip_id', 'k9.tips', 'skill, id')$$,
              'add_skill gives k9.tip_retrievals its keys into k9''s runs, attempts and tips');
INSERT INTO ctxgraph.runs (skill, id) VALUES ('k9', 'k9-keys-run');
SELECT throws_ok($$INSERT INTO ctxgraph.tip_retrievals (skill, run_id, tip_id, rule_id, rank)
                   SELECT 'k9', 'k9-keys-run', t.id, t.rule_id, 1 FROM stig.tips AS t LIMIT 1$$,
                 '23503', NULL, 'a k9 retrieval cannot name a stig tip (23503)');
SELECT throws_ok($$INSERT INTO ctxgraph.tip_retrievals (skill, run_id, attempt_id, tip_id, rule_id, rank)
                   SELECT 'k9', 'k9-keys-run', a.id, (SELECT t.id FROM k9.tips AS t LIMIT 1), a.rule_id, 1
                     FROM stig.attempts AS a LIMIT 1$$,
                 '23503', NULL, 'a k9 retrieval cannot be linked to a stig attempt (23503)');
SELECT throws_ok($$INSERT INTO ctxgraph.tip_retrievals (skill, run_id, tip_id, rule_id, rank)
                   SELECT 'k9', 'run-plain', t.id, 'k9-rule', 1 FROM k9.tips AS t LIMIT 1$$,
                 '23503', NULL, 'a k9 retrieval cannot name a stig run (23503)');
SELECT lives_ok($$INSERT INTO ctxgraph.tip_retrievals (skill, run_id, tip_id, rule_id, rank)
                  SELECT 'k9', 'k9-keys-run', t.id, 'k9-rule', 1 FROM k9.tips AS t LIMIT 1$$,
                'a k9 retrieval of a k9 run and tip is accepted');
SELECT lives_ok($$SELECT ctxgraph.ensure_skill_partitions()$$, 'ensure_skill_partitions runs again over keys already there');
SELECT is(count(*), 15::bigint, 'and declares none twice: 5 keys into the tips of each of stig, cve and k9 (4 levels, the log)')
  FROM pg_constraint AS c
 WHERE c.contype = 'f' AND c.conparentid = 0
   AND c.connamespace IN ('stig'::regnamespace, 'cve'::regnamespace, 'k9'::regnamespace)
   AND c.confrelid IN ('stig.tips'::regclass, 'cve.tips'::regclass, 'k9.tips'::regclass);

-- ---------------------------------------------------------------------------------------------
-- Dropping a skill (7) must leave the other skills intact.
--
-- DROP SCHEMA ... CASCADE alone would drop the parents' foreign keys (they depend on every
-- referenced partition); drop_skill detaches and drops the partitions first.
-- ---------------------------------------------------------------------------------------------
SET LOCAL client_min_messages = warning;  -- DROP SCHEMA ... CASCADE lists what it drops
SELECT lives_ok($$SELECT ctxgraph.drop_skill('k9')$$, 'ctxgraph.drop_skill(''k9'') runs');
SELECT hasnt_schema('k9', 'drop_skill removed schema k9');
SELECT set_eq(format('SELECT * FROM tests.foreign_keys(%L)', s || '.tip_retrievals'),
              format($$VALUES ('skill, run_id', %L, 'skill, id'),
                              ('skill, attempt_id', %L, 'skill, id'),
                              ('skill, tip_id', %L, 'skill, id')$$, s || '.runs', s || '.attempts', s || '.tips'),
              format('after dropping k9, %s.tip_retrievals still references its runs, attempts and tips', s))
  FROM unnest(ARRAY['stig', 'cve']) AS s;
SELECT set_eq($$SELECT * FROM tests.foreign_keys('ctxgraph.attempts')$$,
              $$VALUES ('skill', 'ctxgraph.skills', 'name'),
                       ('skill, run_id', 'ctxgraph.runs', 'skill, id'),
                       ('failure_mode', 'ctxgraph.failure_modes', 'name')$$,
              'after dropping k9, ctxgraph.attempts still references runs');
SELECT throws_ok($$INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank) VALUES ('no-such-run', -42, 'V-230221', 1)$$,
                 '23503', NULL,
                 'after dropping k9, stig still refuses a retrieval of an unknown run and tip (23503)');
SELECT is(count(*), 8::bigint, 'after dropping k9, stig''s and cve''s maintained levels keep their keys')
  FROM pg_constraint AS c
 WHERE c.contype = 'f' AND c.conparentid = 0 AND c.conname LIKE 'tip\_%\_skill\_tip\_id\_fkey'
   AND c.conrelid IN (SELECT i.inhrelid FROM pg_inherits AS i
                       WHERE i.inhparent IN ('ctxgraph.tip_stats'::regclass, 'ctxgraph.tip_attempt_stats'::regclass,
                                             'ctxgraph.tip_rule_stats'::regclass, 'ctxgraph.tip_run_stats'::regclass));

SELECT * FROM finish();
ROLLBACK;
