-- Revert ctxgraph:function_record_outcome from pg

BEGIN;

DROP FUNCTION ctxgraph.record_outcome(text, bigint, boolean, text, timestamptz);

COMMIT;
