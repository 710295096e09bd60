-- Revert ctxgraph:table_failure_modes from pg

BEGIN;

DROP TABLE ctxgraph.failure_modes;
DELETE FROM ctxgraph.parameters WHERE name LIKE 'outcome.%';

COMMIT;
