-- Deploy ctxgraph:index_partition_ids to pg
-- requires: table_runs
-- requires: table_attempts
-- requires: table_tips
-- requires: table_tip_retrievals

-- Lookups by id alone have an index path on every skill's tables. The keys lead with skill (the
-- partition key has to be in them), so a query on a skill's own table by id alone, which is how
-- users and tools address stig.tip_retrievals and the rest, could not use them: UPDATE
-- stig.tip_retrievals ... WHERE id = ANY (3,500 ids) read all of a 500,000-row log (3.5 s) where
-- the same through the parent with skill = 'stig' took 129 ms. One index on id per table, made on
-- the parent, so every partition (and a skill added later) has it; the keys stay as they are.
-- Ids come from sequences, so each index grows at its right edge.
BEGIN;

CREATE INDEX runs_id_idx ON ctxgraph.runs (id);
CREATE INDEX attempts_id_idx ON ctxgraph.attempts (id);
CREATE INDEX tips_id_idx ON ctxgraph.tips (id);
CREATE INDEX tip_retrievals_id_idx ON ctxgraph.tip_retrievals (id);

COMMENT ON INDEX ctxgraph.runs_id_idx IS 'A run by id alone, on a skill''s own table (the key leads with skill).';
COMMENT ON INDEX ctxgraph.attempts_id_idx IS 'An attempt by id alone, on a skill''s own table (the key leads with skill).';
COMMENT ON INDEX ctxgraph.tips_id_idx IS 'A tip by id alone, on a skill''s own table (the key leads with skill).';
COMMENT ON INDEX ctxgraph.tip_retrievals_id_idx IS 'A retrieval by id alone, on a skill''s own table (the key leads with skill).';

COMMIT;
