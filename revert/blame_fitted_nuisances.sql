-- Revert ctxgraph:blame_fitted_nuisances from pg

BEGIN;

DELETE FROM ctxgraph.parameters WHERE name IN ('blame.fit_judge_reliability', 'blame.fit_misleading_failure');

COMMIT;
