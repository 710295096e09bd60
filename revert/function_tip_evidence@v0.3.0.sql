-- Revert ctxgraph:function_tip_evidence from pg

BEGIN;

DROP FUNCTION ctxgraph.tip_evidence(text, timestamptz);
DELETE FROM ctxgraph.parameters WHERE name LIKE 'eviction.%';

COMMIT;
