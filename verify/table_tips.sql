-- Verify ctxgraph:table_tips on pg

SELECT skill, id, rule_id, body, embedding, created_at, retired_at FROM ctxgraph.tips WHERE FALSE;

-- Partitioned by skill; the embedding is a 384-dimension pgvector; per-rule lookups are indexed.
SELECT 1 / COUNT(*)
  FROM pg_catalog.pg_partitioned_table AS pt
  JOIN pg_catalog.pg_attribute AS a ON a.attrelid = pt.partrelid AND a.attnum = pt.partattrs[0]
 WHERE pt.partrelid = 'ctxgraph.tips'::regclass AND pt.partstrat = 'l' AND a.attname = 'skill';
SELECT 1 / COUNT(*) FROM pg_catalog.pg_attribute
 WHERE attrelid = 'ctxgraph.tips'::regclass AND attname = 'embedding'
   AND pg_catalog.format_type(atttypid, atttypmod) = 'vector(384)';
SELECT 1 / COUNT(*) FROM pg_catalog.pg_index
 WHERE indrelid = 'ctxgraph.tips'::regclass AND indexrelid = 'ctxgraph.tips_rule_id_idx'::regclass;
SELECT 1 / (pg_catalog.pg_get_serial_sequence('ctxgraph.tips', 'id') = 'ctxgraph.tips_id_seq')::int;

-- The writer adds tips but cannot retire or edit them (eviction is a SECURITY DEFINER function);
-- the scorer may fill only the embedding; ranker and analyst read.
SELECT 1 / (pg_catalog.has_table_privilege('ctxgraph_writer', 'ctxgraph.tips', 'SELECT')
            AND pg_catalog.has_column_privilege('ctxgraph_writer', 'ctxgraph.tips', 'body', 'INSERT')
            AND pg_catalog.has_sequence_privilege('ctxgraph_writer', 'ctxgraph.tips_id_seq', 'USAGE')
            AND NOT pg_catalog.has_column_privilege('ctxgraph_writer', 'ctxgraph.tips', 'retired_at', 'UPDATE')
            AND NOT pg_catalog.has_table_privilege('ctxgraph_writer', 'ctxgraph.tips', 'DELETE'))::int;
SELECT 1 / (pg_catalog.has_column_privilege('ctxgraph_scorer', 'ctxgraph.tips', 'embedding', 'UPDATE')
            AND NOT pg_catalog.has_column_privilege('ctxgraph_scorer', 'ctxgraph.tips', 'body', 'UPDATE')
            AND NOT pg_catalog.has_column_privilege('ctxgraph_scorer', 'ctxgraph.tips', 'retired_at', 'UPDATE'))::int;
SELECT 1 / (COUNT(*) = 3)::int
  FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_scorer', 'ctxgraph_ranker', 'ctxgraph_analyst')
   AND pg_catalog.has_table_privilege(r.oid, 'ctxgraph.tips', 'SELECT')
   AND NOT pg_catalog.has_table_privilege(r.oid, 'ctxgraph.tips', 'INSERT, DELETE');
