-- Deploy ctxgraph:extension_vector to pg

-- pgvector stores tip embeddings (vector(384), all-MiniLM-L6-v2).
BEGIN;

CREATE EXTENSION IF NOT EXISTS vector;

COMMIT;
