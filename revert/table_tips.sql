-- Revert ctxgraph:table_tips from pg

BEGIN;

DROP TABLE ctxgraph.tips;

COMMIT;
