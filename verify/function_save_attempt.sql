-- Verify ctxgraph:function_save_attempt on pg

SELECT 'ctxgraph.save_attempt(text, text, text, integer, text, timestamptz, timestamptz)'::regprocedure;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_roles r
 WHERE r.rolname = 'ctxgraph_writer'
   AND pg_catalog.has_function_privilege(r.oid, 'ctxgraph.save_attempt(text, text, text, integer, text, timestamptz, timestamptz)', 'execute');
SELECT 1 / COUNT(*) FROM pg_catalog.pg_roles r
 WHERE r.rolname = 'ctxgraph_analyst'
   AND NOT pg_catalog.has_function_privilege(r.oid, 'ctxgraph.save_attempt(text, text, text, integer, text, timestamptz, timestamptz)', 'execute');
