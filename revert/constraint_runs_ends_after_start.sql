-- Revert ctxgraph:constraint_runs_ends_after_start from pg

BEGIN;

ALTER TABLE ctxgraph.runs DROP CONSTRAINT runs_ends_after_start;

COMMIT;
