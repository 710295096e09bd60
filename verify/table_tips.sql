-- Verify ctxgraph:table_tips on pg

SELECT skill, id, rule_id, body, embedding, created_at, retired_at FROM ctxgraph.tips WHERE FALSE;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_attribute
 WHERE attrelid = 'ctxgraph.tips'::regclass AND attname = 'embedding'
   AND pg_catalog.format_type(atttypid, atttypmod) = 'vector(384)';
