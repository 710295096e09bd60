-- Revert ctxgraph:table_tip_retrievals from pg

BEGIN;

DROP TABLE ctxgraph.tip_retrievals;

COMMIT;
