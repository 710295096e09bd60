-- Verify ctxgraph:table_attempts on pg

SELECT skill, id, run_id, rule_id, attempt_number, passed, failure_mode, approach, started_at, ended_at
  FROM ctxgraph.attempts WHERE FALSE;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_partitioned_table WHERE partrelid = 'ctxgraph.attempts'::regclass;
