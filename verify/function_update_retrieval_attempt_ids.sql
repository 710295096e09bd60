-- Verify ctxgraph:function_update_retrieval_attempt_ids on pg

SELECT 'ctxgraph.update_retrieval_attempt_ids(text, bigint[], bigint)'::regprocedure;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_roles r
 WHERE r.rolname = 'ctxgraph_writer'
   AND pg_catalog.has_function_privilege(r.oid, 'ctxgraph.update_retrieval_attempt_ids(text, bigint[], bigint)', 'execute');
