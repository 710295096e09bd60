-- Revert ctxgraph:extension_vector from pg

BEGIN;

DROP EXTENSION IF EXISTS vector;

COMMIT;
