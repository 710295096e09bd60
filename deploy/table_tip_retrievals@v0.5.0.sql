-- Deploy ctxgraph:table_tip_retrievals to pg
-- requires: table_attempts
-- requires: table_tips

-- The retrieval log of ADR-0016/0019: one row per tip retrieved into a Worker prompt, with the
-- outcome that followed. The DEF-27 follow columns arrive in their own change (def27_tip_followed).
BEGIN;

CREATE SEQUENCE ctxgraph.tip_retrievals_id_seq AS bigint;

CREATE TABLE ctxgraph.tip_retrievals (
    skill              text NOT NULL REFERENCES ctxgraph.skills (name),
    id                 bigint NOT NULL DEFAULT nextval('ctxgraph.tip_retrievals_id_seq'),
    run_id             text NOT NULL,
    attempt_id         bigint,
    tip_id             bigint NOT NULL,
    rule_id            text NOT NULL,
    rank               integer NOT NULL CHECK (rank >= 1),
    similarity_score   double precision CHECK (similarity_score <> 'NaN'::double precision),
    outcome_value      double precision CHECK (outcome_value BETWEEN -1 AND 1),
    outcome_confidence double precision CHECK (outcome_confidence BETWEEN 0 AND 1),
    retrieved_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (skill, id),
    FOREIGN KEY (skill, run_id) REFERENCES ctxgraph.runs (skill, id),
    FOREIGN KEY (skill, attempt_id) REFERENCES ctxgraph.attempts (skill, id),
    FOREIGN KEY (skill, tip_id) REFERENCES ctxgraph.tips (skill, id)
) PARTITION BY LIST (skill);

ALTER SEQUENCE ctxgraph.tip_retrievals_id_seq OWNED BY ctxgraph.tip_retrievals.id;

-- Per-tip reads (ranker, eviction), per-attempt writes (link, outcome), and the scoring pass's
-- fallback mapping by run, rule and time.
CREATE INDEX tip_retrievals_tip_idx ON ctxgraph.tip_retrievals (skill, tip_id);
CREATE INDEX tip_retrievals_attempt_idx ON ctxgraph.tip_retrievals (skill, attempt_id);
CREATE INDEX tip_retrievals_run_rule_idx ON ctxgraph.tip_retrievals (skill, run_id, rule_id, retrieved_at);

COMMENT ON TABLE ctxgraph.tip_retrievals IS 'Every tip retrieved into a Worker prompt and the outcome that followed, all skills; rows live in <skill>.tip_retrievals.';
COMMENT ON COLUMN ctxgraph.tip_retrievals.skill IS 'The skill (partition key).';
COMMENT ON COLUMN ctxgraph.tip_retrievals.id IS 'Retrieval id, returned by ctxgraph.log_retrievals.';
COMMENT ON COLUMN ctxgraph.tip_retrievals.run_id IS 'The run the retrieval happened in.';
COMMENT ON COLUMN ctxgraph.tip_retrievals.attempt_id IS 'The attempt whose prompt carried the tip; linked after the attempt is saved.';
COMMENT ON COLUMN ctxgraph.tip_retrievals.tip_id IS 'The tip retrieved.';
COMMENT ON COLUMN ctxgraph.tip_retrievals.rule_id IS 'The rule being fixed.';
COMMENT ON COLUMN ctxgraph.tip_retrievals.rank IS '1-based position of the tip in the retrieved list.';
COMMENT ON COLUMN ctxgraph.tip_retrievals.similarity_score IS 'Retrieval similarity between the query and the tip.';
COMMENT ON COLUMN ctxgraph.tip_retrievals.outcome_value IS 'Graded outcome of the attempt (ctxgraph.graded_outcome); NULL until recorded.';
COMMENT ON COLUMN ctxgraph.tip_retrievals.outcome_confidence IS 'Confidence in outcome_value; 1.0 for deterministic evaluators.';
COMMENT ON COLUMN ctxgraph.tip_retrievals.retrieved_at IS 'When the tip was retrieved.';

GRANT SELECT, INSERT ON ctxgraph.tip_retrievals TO ctxgraph_writer;
GRANT UPDATE (attempt_id, outcome_value, outcome_confidence) ON ctxgraph.tip_retrievals TO ctxgraph_writer;
GRANT USAGE ON SEQUENCE ctxgraph.tip_retrievals_id_seq TO ctxgraph_writer;
GRANT SELECT ON ctxgraph.tip_retrievals TO ctxgraph_scorer, ctxgraph_analyst;

COMMIT;
