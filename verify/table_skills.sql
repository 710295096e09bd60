-- Verify ctxgraph:table_skills on pg

SELECT name, grading, description, created_at FROM ctxgraph.skills WHERE FALSE;
