-- Deploy ctxgraph:table_chunk_embeddings to pg
-- requires: schema_ctxgraph
-- requires: extension_vector
-- requires: table_group_roles

-- The embedding leg's cache of script-chunk vectors. A fix script is cut into windows of the
-- model's 256 word pieces and every window is encoded; successive runs repeat most of them
-- (preambles, helpers, the same remediation tried again), so a vector is kept per chunk text and
-- per model and never computed twice. The key is the sha256 of the chunk's text and the model's
-- provenance id (name, digest of its files and the runtime that ran it): a changed model, export
-- or runtime is a new id, so no stale vector is ever read for it. A vector is a pure function of
-- its key, hence INSERT ... ON CONFLICT DO NOTHING and no UPDATE: two passes that encode the same
-- chunk at once write the same row once.
BEGIN;

CREATE TABLE ctxgraph.chunk_embeddings (
    chunk_sha256 text NOT NULL CHECK (chunk_sha256 ~ '^[0-9a-f]{64}$'),
    model        text NOT NULL CHECK (btrim(model) <> ''),
    embedding    vector(384) NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model, chunk_sha256)
);

COMMENT ON TABLE ctxgraph.chunk_embeddings IS
    'Cache of script-chunk vectors by chunk text (sha256) and embedding model: a chunk is encoded once per model, across passes and runs.';
COMMENT ON COLUMN ctxgraph.chunk_embeddings.chunk_sha256 IS 'sha256 of the chunk''s text (UTF-8), a substring of a fix script.';
COMMENT ON COLUMN ctxgraph.chunk_embeddings.model IS 'Provenance id of the model that encoded it: name@digest of the model files, and the runtime (torch, onnx-fp32, ...).';
COMMENT ON COLUMN ctxgraph.chunk_embeddings.embedding IS 'The chunk''s L2-normalised vector.';
COMMENT ON COLUMN ctxgraph.chunk_embeddings.created_at IS 'When the vector was computed.';

DO $$ BEGIN
    PERFORM ctxgraph._grant('SELECT, INSERT ON ctxgraph.chunk_embeddings', '{scorer}');
    PERFORM ctxgraph._grant('SELECT ON ctxgraph.chunk_embeddings', '{analyst}');
END $$;

COMMIT;
