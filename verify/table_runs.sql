-- Verify ctxgraph:table_runs on pg

SELECT skill, id, started_at, ended_at FROM ctxgraph.runs WHERE FALSE;

-- List-partitioned on skill, keyed by (skill, id), every row tied to a registered skill.
SELECT 1 / COUNT(*)
  FROM pg_catalog.pg_partitioned_table AS pt
  JOIN pg_catalog.pg_attribute AS a ON a.attrelid = pt.partrelid AND a.attnum = pt.partattrs[0]
 WHERE pt.partrelid = 'ctxgraph.runs'::regclass AND pt.partstrat = 'l' AND a.attname = 'skill';
SELECT 1 / COUNT(*) FROM pg_catalog.pg_constraint
 WHERE conrelid = 'ctxgraph.runs'::regclass AND contype = 'p'
   AND pg_catalog.pg_get_constraintdef(oid) = 'PRIMARY KEY (skill, id)';
SELECT 1 / COUNT(*) FROM pg_catalog.pg_constraint
 WHERE conrelid = 'ctxgraph.runs'::regclass AND contype = 'f' AND confrelid = 'ctxgraph.skills'::regclass;

-- The writer inserts runs and may only close them; scorer and analyst read; the ranker does not.
-- (The INSERT is checked on the columns the write path fills: privileges_write_path narrows it to them.)
SELECT 1 / (pg_catalog.has_table_privilege('ctxgraph_writer', 'ctxgraph.runs', 'SELECT')
            AND pg_catalog.has_column_privilege('ctxgraph_writer', 'ctxgraph.runs', 'id', 'INSERT')
            AND pg_catalog.has_column_privilege('ctxgraph_writer', 'ctxgraph.runs', 'ended_at', 'UPDATE')
            AND NOT pg_catalog.has_column_privilege('ctxgraph_writer', 'ctxgraph.runs', 'id', 'UPDATE')
            AND NOT pg_catalog.has_table_privilege('ctxgraph_writer', 'ctxgraph.runs', 'DELETE'))::int;
SELECT 1 / (COUNT(*) = 2)::int
  FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_scorer', 'ctxgraph_analyst')
   AND pg_catalog.has_table_privilege(r.oid, 'ctxgraph.runs', 'SELECT')
   AND NOT pg_catalog.has_table_privilege(r.oid, 'ctxgraph.runs', 'INSERT, UPDATE, DELETE');
SELECT 1 / (NOT pg_catalog.has_table_privilege('ctxgraph_ranker', 'ctxgraph.runs', 'SELECT'))::int;
