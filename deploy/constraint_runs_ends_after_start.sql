-- Deploy ctxgraph:constraint_runs_ends_after_start to pg
-- requires: table_runs

-- A run ends no earlier than it starts, as an attempt does (attempts_ends_after_start). A run_end
-- line dated before its run's first line was stored as it came (a run ended in 2000 that started
-- in 2026), by the bulk load, the per-call replay and a writer's UPDATE of ended_at alike. Declared
-- on the parent, so every skill's partition, and a skill added later, holds it; existing rows are
-- checked as it is added (an upgrade over such a run stops here, naming the constraint, and keeps
-- every row). ingest_run_log refuses such a line first, by its number.
BEGIN;

ALTER TABLE ctxgraph.runs ADD CONSTRAINT runs_ends_after_start CHECK (ended_at >= started_at);

COMMENT ON CONSTRAINT runs_ends_after_start ON ctxgraph.runs IS
    'A run ends no earlier than it starts (either may be unknown).';

COMMIT;
