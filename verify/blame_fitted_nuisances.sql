-- Verify ctxgraph:blame_fitted_nuisances on pg

SELECT 1 / (count(*) = 2)::int FROM ctxgraph.parameters
 WHERE name IN ('blame.fit_judge_reliability', 'blame.fit_misleading_failure') AND value IN (0, 1);
