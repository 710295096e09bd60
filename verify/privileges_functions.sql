-- Verify ctxgraph:privileges_functions on pg

-- No function in schema ctxgraph is executable by PUBLIC (a NULL ACL means PUBLIC may execute).
SELECT 1 / (count(*) = 0)::int
  FROM pg_catalog.pg_proc AS p
 WHERE p.pronamespace = 'ctxgraph'::regnamespace
   AND (p.proacl IS NULL OR EXISTS (SELECT 1 FROM pg_catalog.aclexplode(p.proacl) AS x WHERE x.grantee = 0));
