-- Verify ctxgraph:function_follow_label_metrics on pg

SELECT 'ctxgraph.follow_label_metrics(text, bigint[], boolean[])'::regprocedure;
