-- Verify ctxgraph:table_attempts on pg

SELECT skill, id, run_id, rule_id, attempt_number, passed, failure_mode, approach, started_at, ended_at
  FROM ctxgraph.attempts WHERE FALSE;

-- List-partitioned on skill; one id sequence for all skills, owned by the column.
SELECT 1 / COUNT(*)
  FROM pg_catalog.pg_partitioned_table AS pt
  JOIN pg_catalog.pg_attribute AS a ON a.attrelid = pt.partrelid AND a.attnum = pt.partattrs[0]
 WHERE pt.partrelid = 'ctxgraph.attempts'::regclass AND pt.partstrat = 'l' AND a.attname = 'skill';
SELECT 1 / (pg_catalog.pg_get_serial_sequence('ctxgraph.attempts', 'id') = 'ctxgraph.attempts_id_seq')::int;

-- The integrity rules the write path relies on, by name and definition: one row per run, rule
-- and attempt number; a passed attempt has no failure mode; an attempt ends after it starts; the
-- run and the failure mode exist.
SELECT 1 / (COUNT(*) = 5)::int
  FROM pg_catalog.pg_constraint
 WHERE conrelid = 'ctxgraph.attempts'::regclass
   AND (conname, pg_catalog.pg_get_constraintdef(oid)) IN (
        ('attempts_run_rule_attempt_key', 'UNIQUE (skill, run_id, rule_id, attempt_number)'),
        ('attempts_passed_has_no_failure_mode', 'CHECK (((passed IS NOT TRUE) OR (failure_mode IS NULL)))'),
        ('attempts_ends_after_start', 'CHECK ((ended_at >= started_at))'),
        ('attempts_attempt_number_check', 'CHECK ((attempt_number >= 1))'),
        ('attempts_skill_run_id_fkey', 'FOREIGN KEY (skill, run_id) REFERENCES ctxgraph.runs(skill, id)'));
SELECT 1 / COUNT(*) FROM pg_catalog.pg_constraint
 WHERE conrelid = 'ctxgraph.attempts'::regclass AND contype = 'f' AND confrelid = 'ctxgraph.failure_modes'::regclass;

-- The writer inserts attempts and may update none of their keys; scorer and analyst read; the
-- ranker does not see attempts. (The INSERT is checked on the columns the write path fills, and
-- the results are not checked as the writer's: privileges_write_path leaves them to record_outcome.)
SELECT 1 / (pg_catalog.has_table_privilege('ctxgraph_writer', 'ctxgraph.attempts', 'SELECT')
            AND pg_catalog.has_column_privilege('ctxgraph_writer', 'ctxgraph.attempts', 'rule_id', 'INSERT')
            AND pg_catalog.has_column_privilege('ctxgraph_writer', 'ctxgraph.attempts', 'attempt_number', 'INSERT')
            AND NOT pg_catalog.has_column_privilege('ctxgraph_writer', 'ctxgraph.attempts', 'rule_id', 'UPDATE')
            AND NOT pg_catalog.has_column_privilege('ctxgraph_writer', 'ctxgraph.attempts', 'attempt_number', 'UPDATE')
            AND NOT pg_catalog.has_table_privilege('ctxgraph_writer', 'ctxgraph.attempts', 'DELETE')
            AND pg_catalog.has_sequence_privilege('ctxgraph_writer', 'ctxgraph.attempts_id_seq', 'USAGE'))::int;
SELECT 1 / (COUNT(*) = 2)::int
  FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_scorer', 'ctxgraph_analyst')
   AND pg_catalog.has_table_privilege(r.oid, 'ctxgraph.attempts', 'SELECT')
   AND NOT pg_catalog.has_table_privilege(r.oid, 'ctxgraph.attempts', 'INSERT, UPDATE, DELETE');
SELECT 1 / (NOT pg_catalog.has_table_privilege('ctxgraph_ranker', 'ctxgraph.attempts', 'SELECT'))::int;
