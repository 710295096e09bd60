-- Verify ctxgraph:function_log_retrievals on pg

SELECT 'ctxgraph.log_retrievals(text, text, text, bigint[], double precision[], timestamptz)'::regprocedure;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_roles r
 WHERE r.rolname = 'ctxgraph_writer'
   AND pg_catalog.has_function_privilege(r.oid, 'ctxgraph.log_retrievals(text, text, text, bigint[], double precision[], timestamptz)', 'execute');
