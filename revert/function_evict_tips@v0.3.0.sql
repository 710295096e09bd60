-- Revert ctxgraph:function_evict_tips from pg

BEGIN;

DROP FUNCTION ctxgraph.restore_tip(text, bigint, timestamptz);
DROP FUNCTION ctxgraph.evict_tips(text, timestamptz, boolean);

COMMIT;
