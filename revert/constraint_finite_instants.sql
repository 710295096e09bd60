-- Revert ctxgraph:constraint_finite_instants from pg

BEGIN;

ALTER TABLE ctxgraph.runs DROP CONSTRAINT runs_finite_instants;
ALTER TABLE ctxgraph.attempts DROP CONSTRAINT attempts_finite_instants;
ALTER TABLE ctxgraph.tip_retrievals DROP CONSTRAINT retrievals_finite_instant;

COMMIT;
