-- Deploy ctxgraph:constraint_finite_instants to pg
-- requires: table_runs
-- requires: table_attempts
-- requires: table_tip_retrievals

-- Every instant the log keeps is finite. 'infinity' is a valid timestamptz and was stored as it
-- came (log_retrievals(..., 'infinity'), a plain INSERT, a run's end): a retrieval at +infinity is
-- later than every as_of, so ensure_tip_effects refitted on every call and tip_evidence read the
-- whole log, and the writer, who may not DELETE, could not take it back. The write-path functions
-- refuse such an instant first (22023, naming the line in a bulk load); these checks hold plain
-- INSERTs and UPDATEs to the same rule (23514). Declared on the parents, so every skill's
-- partition, and a skill added later, holds them; existing rows are checked as they are added (an
-- upgrade over such a row stops here, naming the constraint, and keeps every row).
BEGIN;

ALTER TABLE ctxgraph.tip_retrievals ADD CONSTRAINT retrievals_finite_instant CHECK (isfinite(retrieved_at));
ALTER TABLE ctxgraph.attempts ADD CONSTRAINT attempts_finite_instants CHECK (isfinite(started_at) AND isfinite(ended_at));
ALTER TABLE ctxgraph.runs ADD CONSTRAINT runs_finite_instants CHECK (isfinite(started_at) AND isfinite(ended_at));

COMMENT ON CONSTRAINT retrievals_finite_instant ON ctxgraph.tip_retrievals IS
    'A retrieval happened at a finite instant (not infinity or -infinity).';
COMMENT ON CONSTRAINT attempts_finite_instants ON ctxgraph.attempts IS
    'An attempt''s start and end are finite instants, or unknown.';
COMMENT ON CONSTRAINT runs_finite_instants ON ctxgraph.runs IS
    'A run''s start and end are finite instants (its end may be unknown).';

COMMIT;
