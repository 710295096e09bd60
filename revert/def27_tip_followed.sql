-- Revert ctxgraph:def27_tip_followed from pg

-- Dropping the columns also drops their grants and the partial index; every other column and
-- row stays as it was.
BEGIN;

DROP INDEX ctxgraph.tip_retrievals_unscored_idx;

ALTER TABLE ctxgraph.tip_retrievals
    DROP COLUMN tip_followed_computed_at,
    DROP COLUMN tip_followed_emb,
    DROP COLUMN tip_followed_llm;

COMMIT;
