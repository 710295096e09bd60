-- Verify ctxgraph:table_parameters on pg

SELECT name, value, description, updated_at FROM ctxgraph.parameters WHERE FALSE;
SELECT pg_catalog.has_function_privilege('ctxgraph.param(text)', 'execute');
SELECT 1 / COUNT(*) FROM pg_catalog.pg_roles r
 WHERE r.rolname = 'ctxgraph_ranker' AND pg_catalog.has_table_privilege(r.oid, 'ctxgraph.parameters', 'select')
   AND NOT pg_catalog.has_table_privilege(r.oid, 'ctxgraph.parameters', 'update');
