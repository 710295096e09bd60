-- Revert ctxgraph:table_runs from pg

BEGIN;

DROP TABLE ctxgraph.runs;

COMMIT;
