-- Verify ctxgraph:extension_vector on pg

SELECT 1 / COUNT(*) FROM pg_catalog.pg_extension WHERE extname = 'vector';
-- The type and the cosine-distance operator the tips and the scorer rely on actually work.
SELECT 1 / (('[1,0,0]'::vector(3) <=> '[0,1,0]'::vector(3)) = 1)::int;
SELECT 1 / (('[1,2,3]'::vector(3) <=> '[2,4,6]'::vector(3)) < 1e-9)::int;
