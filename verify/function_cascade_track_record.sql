-- Verify ctxgraph:function_cascade_track_record on pg

SELECT 'ctxgraph.cascade_track_record(text, bigint, text, text, double precision, double precision, text)'::regprocedure;
-- The scorer and the analyst run it, nobody else; PUBLIC runs nothing.
SELECT 1 / has_function_privilege('ctxgraph_scorer', 'ctxgraph.cascade_track_record(text, bigint, text, text, double precision, double precision, text)', 'EXECUTE')::int;
SELECT 1 / has_function_privilege('ctxgraph_analyst', 'ctxgraph.cascade_track_record(text, bigint, text, text, double precision, double precision, text)', 'EXECUTE')::int;
SELECT 1 / (NOT has_function_privilege('ctxgraph_writer', 'ctxgraph.cascade_track_record(text, bigint, text, text, double precision, double precision, text)', 'EXECUTE'))::int;
SELECT 1 / (NOT EXISTS (SELECT 1 FROM pg_catalog.pg_proc AS p, pg_catalog.aclexplode(p.proacl) AS x
                         WHERE p.proname = 'cascade_track_record' AND p.pronamespace = 'ctxgraph'::regnamespace
                           AND x.grantee = 0))::int;
-- An empty skill has no record.
SELECT 1 / (questions = 0 AND outside_band = 0)::int
  FROM ctxgraph.cascade_track_record('stig', NULL, 'verify-none', 'verify-judge', 0.3, 0.8);
