-- Verify ctxgraph:roles on pg

-- The four group roles exist and are plain NOLOGIN groups: a login or superuser group would
-- make every privilege check of the later changes meaningless.
SELECT 1 / (COUNT(*) = 4)::int
  FROM pg_catalog.pg_roles
 WHERE rolname IN ('ctxgraph_writer', 'ctxgraph_scorer', 'ctxgraph_ranker', 'ctxgraph_analyst')
   AND NOT rolcanlogin AND NOT rolsuper AND NOT rolcreaterole AND NOT rolcreatedb AND NOT rolbypassrls;
