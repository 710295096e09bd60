-- Verify ctxgraph:function_record_outcome on pg

SELECT 'ctxgraph.record_outcome(text, bigint, boolean, text, timestamptz)'::regprocedure;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_roles r
 WHERE r.rolname = 'ctxgraph_writer'
   AND pg_catalog.has_function_privilege(r.oid, 'ctxgraph.record_outcome(text, bigint, boolean, text, timestamptz)', 'execute');
