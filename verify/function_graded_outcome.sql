-- Verify ctxgraph:function_graded_outcome on pg

SELECT 'ctxgraph.graded_outcome(text, boolean, integer, text)'::regprocedure;
SELECT 'ctxgraph._require_skill(text)'::regprocedure;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_roles r
 WHERE r.rolname = 'ctxgraph_analyst'
   AND pg_catalog.has_function_privilege(r.oid, 'ctxgraph.graded_outcome(text, boolean, integer, text)', 'execute');
