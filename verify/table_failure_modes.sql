-- Verify ctxgraph:table_failure_modes on pg

SELECT name, outcome_parameter, is_harm, description FROM ctxgraph.failure_modes WHERE FALSE;
SELECT 1 / COUNT(*) FROM ctxgraph.failure_modes WHERE name = 'health_failure' AND is_harm;
SELECT 1 / (COUNT(*) = 10)::int FROM ctxgraph.parameters WHERE name LIKE 'outcome.%';
