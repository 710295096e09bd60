-- Revert ctxgraph:table_parameters from pg

BEGIN;

DROP FUNCTION ctxgraph.param(text);
DROP TABLE ctxgraph.parameters;

COMMIT;
