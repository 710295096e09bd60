-- Verify ctxgraph:extension_vector on pg

SELECT 1 / COUNT(*) FROM pg_catalog.pg_extension WHERE extname = 'vector';
