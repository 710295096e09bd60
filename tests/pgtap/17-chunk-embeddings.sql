-- The embedding leg's chunk cache (ctxgraph.chunk_embeddings): its columns and key, the rules a
-- row must keep, and who may read and write it (the scorer inserts, the analyst reads, nobody
-- updates or deletes).
BEGIN;
SELECT plan(24);

SELECT has_table('ctxgraph', 'chunk_embeddings', 'ctxgraph.chunk_embeddings exists');
SELECT columns_are('ctxgraph', 'chunk_embeddings', ARRAY['chunk_sha256', 'model', 'embedding', 'created_at'],
                   'chunk_embeddings has exactly its four columns');
SELECT col_type_is('ctxgraph', 'chunk_embeddings', 'embedding', 'vector(384)', 'embedding is vector(384)');
SELECT col_type_is('ctxgraph', 'chunk_embeddings', 'chunk_sha256', 'text', 'chunk_sha256 is text');
SELECT col_type_is('ctxgraph', 'chunk_embeddings', 'model', 'text', 'model is text');
SELECT col_not_null('ctxgraph', 'chunk_embeddings', 'embedding', 'a cached row always has its vector');
SELECT col_is_pk('ctxgraph', 'chunk_embeddings', ARRAY['model', 'chunk_sha256'], 'one vector per (model, chunk)');
SELECT isnt(obj_description('ctxgraph.chunk_embeddings'::regclass, 'pg_class'), NULL, 'the table carries a comment');

-- Rows: as the scorer, which is who writes them.
SET LOCAL ROLE ctxgraph_scorer;
SELECT lives_ok($$INSERT INTO ctxgraph.chunk_embeddings (chunk_sha256, model, embedding)
                  VALUES (repeat('a1', 32), 'm@1 torch', array_fill(0.05::real, ARRAY[384])::vector)$$,
                'the scorer inserts a chunk vector');
SELECT lives_ok($$INSERT INTO ctxgraph.chunk_embeddings (chunk_sha256, model, embedding)
                  VALUES (repeat('a1', 32), 'm@2 onnx-fp32', array_fill(0.05::real, ARRAY[384])::vector)$$,
                'the same chunk under another model id is a row of its own');
SELECT throws_ok($$INSERT INTO ctxgraph.chunk_embeddings (chunk_sha256, model, embedding)
                   VALUES (repeat('a1', 32), 'm@1 torch', array_fill(0.05::real, ARRAY[384])::vector)$$,
                 '23505', NULL, 'the same (model, chunk) twice is refused');
SELECT lives_ok($$INSERT INTO ctxgraph.chunk_embeddings (chunk_sha256, model, embedding)
                  VALUES (repeat('a1', 32), 'm@1 torch', array_fill(0.05::real, ARRAY[384])::vector)
                  ON CONFLICT DO NOTHING$$,
                'the scorer''s ON CONFLICT DO NOTHING insert of a cached chunk does nothing');
SELECT throws_ok($$INSERT INTO ctxgraph.chunk_embeddings (chunk_sha256, model, embedding)
                   VALUES ('A1', 'm@1 torch', array_fill(0.05::real, ARRAY[384])::vector)$$,
                 '23514', NULL, 'a chunk hash that is not 64 lower-case hex digits is refused');
SELECT throws_ok($$INSERT INTO ctxgraph.chunk_embeddings (chunk_sha256, model, embedding)
                   VALUES (repeat('b2', 32), ' ', array_fill(0.05::real, ARRAY[384])::vector)$$,
                 '23514', NULL, 'a blank model id is refused');
SELECT throws_ok($$INSERT INTO ctxgraph.chunk_embeddings (chunk_sha256, model, embedding)
                   VALUES (repeat('b2', 32), 'm@1 torch', NULL)$$,
                 '23502', NULL, 'a row without its vector is refused');
SELECT throws_ok($$INSERT INTO ctxgraph.chunk_embeddings (chunk_sha256, model, embedding)
                   VALUES (repeat('b2', 32), 'm@1 torch', '[1,2,3]')$$,
                 '22000', NULL, 'a vector of another dimension is refused');
SELECT results_eq($$SELECT model, embedding <=> array_fill(0.05::real, ARRAY[384])::vector < 1e-6 FROM ctxgraph.chunk_embeddings WHERE chunk_sha256 = repeat('a1', 32) ORDER BY model$$,
                  $$VALUES ('m@1 torch'::text, true), ('m@2 onnx-fp32', true)$$,
                  'the scorer reads back one row per model');
SELECT throws_ok($$UPDATE ctxgraph.chunk_embeddings SET created_at = now()$$, '42501', NULL,
                 'the scorer cannot change a cached vector');
SELECT throws_ok($$DELETE FROM ctxgraph.chunk_embeddings$$, '42501', NULL, 'the scorer cannot delete cached vectors');
RESET ROLE;

SET LOCAL ROLE ctxgraph_analyst;
SELECT is((SELECT count(*)::int FROM ctxgraph.chunk_embeddings WHERE chunk_sha256 = repeat('a1', 32)), 2,
          'the analyst reads the cache');
SELECT throws_ok($$INSERT INTO ctxgraph.chunk_embeddings (chunk_sha256, model, embedding)
                   VALUES (repeat('c3', 32), 'm@1 torch', array_fill(0.05::real, ARRAY[384])::vector)$$,
                 '42501', NULL, 'the analyst cannot write the cache');
RESET ROLE;

SET LOCAL ROLE ctxgraph_writer;
SELECT throws_ok($$SELECT count(*) FROM ctxgraph.chunk_embeddings$$, '42501', NULL, 'the writer cannot read the cache');
RESET ROLE;

SET LOCAL ROLE ctxgraph_ranker;
SELECT throws_ok($$SELECT count(*) FROM ctxgraph.chunk_embeddings$$, '42501', NULL, 'the ranker cannot read the cache');
RESET ROLE;

SELECT ok(NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class AS c, pg_catalog.aclexplode(c.relacl) AS x
                       WHERE c.oid = 'ctxgraph.chunk_embeddings'::regclass AND x.grantee = 0),
          'PUBLIC holds nothing on the cache');

SELECT * FROM finish();
ROLLBACK;
