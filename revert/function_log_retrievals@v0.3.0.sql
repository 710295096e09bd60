-- Revert ctxgraph:function_log_retrievals from pg

BEGIN;

DROP FUNCTION ctxgraph.log_retrievals(text, text, text, bigint[], double precision[], timestamptz);

COMMIT;
