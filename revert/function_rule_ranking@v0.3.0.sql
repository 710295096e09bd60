-- Revert ctxgraph:function_rule_ranking from pg

BEGIN;

DROP FUNCTION ctxgraph.rule_ranking(text, text);

COMMIT;
