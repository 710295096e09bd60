-- Revert ctxgraph:table_chunk_embeddings from pg

BEGIN;

DROP TABLE ctxgraph.chunk_embeddings;

COMMIT;
