-- Verify ctxgraph:function_evict_tips on pg

SELECT 'ctxgraph.evict_tips(text, timestamptz, boolean)'::regprocedure;
SELECT 'ctxgraph.restore_tip(text, bigint, timestamptz)'::regprocedure;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_proc
 WHERE oid = 'ctxgraph.evict_tips(text, timestamptz, boolean)'::regprocedure AND prosecdef
   AND proconfig @> ARRAY['search_path=pg_catalog, ctxgraph, pg_temp'];
