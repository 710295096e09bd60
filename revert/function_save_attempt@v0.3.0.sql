-- Revert ctxgraph:function_save_attempt from pg

BEGIN;

DROP FUNCTION ctxgraph.save_attempt(text, text, text, integer, text, timestamptz, timestamptz);

COMMIT;
