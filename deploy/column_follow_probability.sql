-- Deploy ctxgraph:column_follow_probability to pg
-- requires: def27_tip_followed
-- requires: table_scoring_state
-- requires: table_follow_calibrations
-- requires: skill_provisioning
-- requires: table_group_roles

-- A third follow signal beside the DEF-27 columns: follow_probability, the calibrated probability
-- that the script followed the tip, computed by the scoring pass from a lexical and a cosine
-- signal without asking the judge. Like the DEF-27 columns it is the scorer's alone: the scorer
-- may UPDATE it, and the writer, which held INSERT on the whole table, now holds INSERT on the
-- columns it may fill, so it can neither insert nor update a probability. (A column added to the
-- table later is not the writer's to fill unless a change grants it.) retrieval_scores gains the
-- signal's status (why the probability is NULL), the calibration and signal version it came
-- from, and the evidence the signal matched. Grants are made on the parents;
-- ensure_skill_partitions copies them, and the comments, to every skill's partition, and
-- add_skill does the same for a skill added later.
BEGIN;

ALTER TABLE ctxgraph.tip_retrievals
    -- NaN passes one-sided comparisons in PostgreSQL (it sorts above every number): refused by name.
    ADD COLUMN follow_probability double precision
        CONSTRAINT tip_retrievals_follow_probability_range
        CHECK (follow_probability <> 'NaN'::double precision AND follow_probability BETWEEN 0 AND 1);

COMMENT ON COLUMN ctxgraph.tip_retrievals.follow_probability IS
    'Calibrated probability in [0, 1] that the attempt''s fix script followed the tip, from the scoring pass''s lexical and cosine signal (retrieval_scores says which calibration); decides the follow verdict when the judge is silent. NULL when not computed.';

ALTER TABLE ctxgraph.retrieval_scores
    ADD COLUMN signal_status text,
    ADD COLUMN calibration_id bigint,
    ADD COLUMN signal_version text,
    ADD COLUMN follow_evidence jsonb,
    -- A retrieval's calibration is one of its own skill's; deleting a fit forgets the link only.
    ADD CONSTRAINT retrieval_scores_calibration_fkey FOREIGN KEY (skill, calibration_id)
        REFERENCES ctxgraph.follow_calibrations (skill, calibration_id) ON DELETE SET NULL (calibration_id);

COMMENT ON COLUMN ctxgraph.retrieval_scores.signal_status IS
    'computed, or why tip_retrievals.follow_probability is NULL (no_script, signal_skipped, ...); NULL for rows scored before the signal existed.';
COMMENT ON COLUMN ctxgraph.retrieval_scores.calibration_id IS
    'The ctxgraph.follow_calibrations fit the probability came from; NULL: the scoring package''s documented default calibration, named by signal_version.';
COMMENT ON COLUMN ctxgraph.retrieval_scores.signal_version IS 'The signal (and default calibration) version the probability was computed with, e.g. lexical-1.';
COMMENT ON COLUMN ctxgraph.retrieval_scores.follow_evidence IS 'Which items of the tip the script matched, as the scoring pass found them.';

DO $$
BEGIN
    PERFORM ctxgraph._grant('UPDATE (follow_probability) ON ctxgraph.tip_retrievals', '{scorer}');
    -- Revoking the table-level INSERT also revokes column INSERTs; then the writer's columns.
    PERFORM ctxgraph._revoke('INSERT ON ctxgraph.tip_retrievals', '{writer}');
    PERFORM ctxgraph._grant('INSERT (skill, id, run_id, attempt_id, tip_id, rule_id, rank, similarity_score, '
                            'outcome_value, outcome_confidence, retrieved_at, tip_followed_llm, tip_followed_emb, '
                            'tip_followed_computed_at) ON ctxgraph.tip_retrievals', '{writer}');
    PERFORM ctxgraph.ensure_skill_partitions();
END
$$;

COMMIT;
