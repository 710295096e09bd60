-- Verify ctxgraph:function_rule_ranking on pg

SELECT 'ctxgraph.rule_ranking(text, text)'::regprocedure;
