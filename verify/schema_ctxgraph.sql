-- Verify ctxgraph:schema_ctxgraph on pg

SELECT pg_catalog.has_schema_privilege('ctxgraph', 'usage');
SELECT 1 / COUNT(*) FROM pg_catalog.pg_namespace WHERE nspname = 'ctxgraph';
SELECT 1 / COUNT(*) FROM pg_catalog.pg_roles r
 WHERE r.rolname = 'ctxgraph_analyst' AND pg_catalog.has_schema_privilege(r.oid, 'ctxgraph', 'usage');
