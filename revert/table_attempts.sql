-- Revert ctxgraph:table_attempts from pg

BEGIN;

DROP TABLE ctxgraph.attempts;

COMMIT;
