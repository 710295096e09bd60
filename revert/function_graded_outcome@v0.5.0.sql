-- Revert ctxgraph:function_graded_outcome from pg

BEGIN;

DROP FUNCTION ctxgraph.graded_outcome(text, boolean, integer, text);
DROP FUNCTION ctxgraph._require_skill(text);

COMMIT;
