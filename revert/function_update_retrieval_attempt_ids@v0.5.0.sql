-- Revert ctxgraph:function_update_retrieval_attempt_ids from pg

BEGIN;

DROP FUNCTION ctxgraph.update_retrieval_attempt_ids(text, bigint[], bigint);

COMMIT;
