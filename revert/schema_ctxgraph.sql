-- Revert ctxgraph:schema_ctxgraph from pg

BEGIN;

DROP SCHEMA ctxgraph;

COMMIT;
