-- Verify ctxgraph:table_chunk_embeddings on pg

SELECT chunk_sha256, model, embedding, created_at FROM ctxgraph.chunk_embeddings WHERE FALSE;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_attribute
 WHERE attrelid = 'ctxgraph.chunk_embeddings'::regclass AND attname = 'embedding'
   AND pg_catalog.format_type(atttypid, atttypmod) = 'vector(384)';
-- Privileges both ways: only the scorer writes (INSERT, never UPDATE or DELETE), the analyst
-- reads, the writer and the ranker see nothing.
SELECT 1 / has_table_privilege('ctxgraph_scorer', 'ctxgraph.chunk_embeddings', 'INSERT')::int;
SELECT 1 / has_table_privilege('ctxgraph_scorer', 'ctxgraph.chunk_embeddings', 'SELECT')::int;
SELECT 1 / (NOT has_table_privilege('ctxgraph_scorer', 'ctxgraph.chunk_embeddings', 'UPDATE'))::int;
SELECT 1 / (NOT has_table_privilege('ctxgraph_scorer', 'ctxgraph.chunk_embeddings', 'DELETE'))::int;
SELECT 1 / has_table_privilege('ctxgraph_analyst', 'ctxgraph.chunk_embeddings', 'SELECT')::int;
SELECT 1 / (NOT has_table_privilege('ctxgraph_analyst', 'ctxgraph.chunk_embeddings', 'INSERT'))::int;
SELECT 1 / (NOT has_table_privilege('ctxgraph_writer', 'ctxgraph.chunk_embeddings', 'SELECT'))::int;
SELECT 1 / (NOT has_table_privilege('ctxgraph_ranker', 'ctxgraph.chunk_embeddings', 'SELECT'))::int;
-- Behaviour, rolled back: one vector per (model, chunk); the same key again is refused, another
-- model's vector for the same chunk is a row of its own, and a malformed hash or a vector of the
-- wrong length is refused.
DO $$
DECLARE
    chunk constant text := repeat('ab', 32);
    vec   constant vector := array_fill(0.05::real, ARRAY[384])::vector;
BEGIN
    INSERT INTO ctxgraph.chunk_embeddings (chunk_sha256, model, embedding) VALUES (chunk, 'verify@1 torch', vec);
    INSERT INTO ctxgraph.chunk_embeddings (chunk_sha256, model, embedding) VALUES (chunk, 'verify@2 torch', vec);
    IF (SELECT count(*) FROM ctxgraph.chunk_embeddings WHERE chunk_sha256 = chunk) <> 2 THEN
        RAISE EXCEPTION 'verify: a chunk does not get one row per model';
    END IF;
    BEGIN
        INSERT INTO ctxgraph.chunk_embeddings (chunk_sha256, model, embedding) VALUES (chunk, 'verify@1 torch', vec);
        RAISE EXCEPTION 'verify: the same (model, chunk) was stored twice';
    EXCEPTION WHEN unique_violation THEN NULL;
    END;
    BEGIN
        INSERT INTO ctxgraph.chunk_embeddings (chunk_sha256, model, embedding) VALUES ('not-a-hash', 'verify@1 torch', vec);
        RAISE EXCEPTION 'verify: a malformed chunk hash was accepted';
    EXCEPTION WHEN check_violation THEN NULL;
    END;
    BEGIN
        INSERT INTO ctxgraph.chunk_embeddings (chunk_sha256, model, embedding) VALUES (repeat('cd', 32), 'verify@1 torch', '[1,2,3]');
        RAISE EXCEPTION 'verify: a vector of the wrong dimension was accepted';
    EXCEPTION WHEN data_exception THEN NULL;
    END;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
