-- Verify ctxgraph:function_tip_evidence on pg

SELECT 'ctxgraph.tip_evidence(text, timestamptz)'::regprocedure;
SELECT 1 / (COUNT(*) = 7)::int FROM ctxgraph.parameters WHERE name LIKE 'eviction.%';
