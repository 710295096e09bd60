-- Verify ctxgraph:function_follow_weight on pg

SELECT 'ctxgraph.follow_weight(boolean, double precision)'::regprocedure;
SELECT 'ctxgraph.tip_followed(boolean, double precision)'::regprocedure;
SELECT 1 / (COUNT(*) = 6)::int FROM ctxgraph.parameters WHERE name LIKE 'follow.%';
