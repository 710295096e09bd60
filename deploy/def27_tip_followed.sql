-- Deploy ctxgraph:def27_tip_followed to pg
-- requires: skill_provisioning
-- requires: table_tip_retrievals

-- ADR-0019 DEF-27: per-retrieval causal attribution. Added to the parent table, so every skill's
-- tip_retrievals gains the columns; all nullable, so the change is additive and its revert drops
-- exactly these three columns and nothing else.
BEGIN;

ALTER TABLE ctxgraph.tip_retrievals
    ADD COLUMN tip_followed_llm boolean,
    -- A cosine; NaN is accepted and read as NULL by ctxgraph.follow_weight, as the ADR's failure
    -- semantics say, but the scoring pass itself writes NULL.
    ADD COLUMN tip_followed_emb double precision
        CONSTRAINT tip_retrievals_tip_followed_emb_range
        CHECK (tip_followed_emb = 'NaN'::double precision OR tip_followed_emb BETWEEN -1 AND 1),
    ADD COLUMN tip_followed_computed_at timestamptz;

-- The scoring pass claims a run's unscored rows; this keeps that scan small once most rows are scored.
CREATE INDEX tip_retrievals_unscored_idx ON ctxgraph.tip_retrievals (skill, run_id)
    WHERE tip_followed_computed_at IS NULL;

COMMENT ON COLUMN ctxgraph.tip_retrievals.tip_followed_llm IS
    'DEF-27: the LLM judge''s verdict that the attempt''s fix script followed the tip; NULL when not judged or the judge failed.';
COMMENT ON COLUMN ctxgraph.tip_retrievals.tip_followed_emb IS
    'DEF-27: cosine between the tip and the fix script (all-MiniLM-L6-v2); NULL when not computed.';
COMMENT ON COLUMN ctxgraph.tip_retrievals.tip_followed_computed_at IS
    'DEF-27: when the scoring pass scored this row; NULL rows are scored by the next pass.';

GRANT UPDATE (tip_followed_llm, tip_followed_emb, tip_followed_computed_at) ON ctxgraph.tip_retrievals TO ctxgraph_scorer;

-- Existing skills' partitions need the new column grants and comments.
DO $$ BEGIN PERFORM ctxgraph.ensure_skill_partitions(); END $$;

COMMIT;
