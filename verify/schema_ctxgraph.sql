-- Verify ctxgraph:schema_ctxgraph on pg

SELECT 1 / COUNT(*) FROM pg_catalog.pg_namespace WHERE nspname = 'ctxgraph';
-- Every group role may use the schema but not create objects in it; PUBLIC may not use it.
SELECT 1 / (COUNT(*) = 4)::int
  FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_writer', 'ctxgraph_scorer', 'ctxgraph_ranker', 'ctxgraph_analyst')
   AND pg_catalog.has_schema_privilege(r.oid, 'ctxgraph', 'USAGE')
   AND NOT pg_catalog.has_schema_privilege(r.oid, 'ctxgraph', 'CREATE');
SELECT 1 / (NOT pg_catalog.has_schema_privilege('public', 'ctxgraph', 'USAGE'))::int;
