-- Revert ctxgraph:table_tip_evictions from pg

BEGIN;

DROP TABLE ctxgraph.tip_evictions;

COMMIT;
