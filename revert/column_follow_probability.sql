-- Revert ctxgraph:column_follow_probability from pg

BEGIN;

DO $$
BEGIN
    -- Back to the writer's table-level INSERT (revoking it also drops its column INSERTs).
    PERFORM ctxgraph._revoke('INSERT ON ctxgraph.tip_retrievals', '{writer}');
    PERFORM ctxgraph._grant('INSERT ON ctxgraph.tip_retrievals', '{writer}');
END
$$;

ALTER TABLE ctxgraph.retrieval_scores
    DROP CONSTRAINT retrieval_scores_calibration_fkey,
    DROP COLUMN follow_evidence,
    DROP COLUMN signal_version,
    DROP COLUMN calibration_id,
    DROP COLUMN signal_status;

-- Its column grant goes with the column.
ALTER TABLE ctxgraph.tip_retrievals DROP COLUMN follow_probability;

DO $$ BEGIN PERFORM ctxgraph.ensure_skill_partitions(); END $$;

COMMIT;
