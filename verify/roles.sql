-- Verify ctxgraph:roles on pg

SELECT 1 / COUNT(*) FROM pg_catalog.pg_roles WHERE rolname = 'ctxgraph_writer' AND NOT rolcanlogin;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_roles WHERE rolname = 'ctxgraph_scorer' AND NOT rolcanlogin;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_roles WHERE rolname = 'ctxgraph_ranker' AND NOT rolcanlogin;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_roles WHERE rolname = 'ctxgraph_analyst' AND NOT rolcanlogin;
