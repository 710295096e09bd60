-- Verify ctxgraph:table_runs on pg

SELECT skill, id, started_at, ended_at FROM ctxgraph.runs WHERE FALSE;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_partitioned_table WHERE partrelid = 'ctxgraph.runs'::regclass;
