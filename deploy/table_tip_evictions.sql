-- Deploy ctxgraph:table_tip_evictions to pg
-- requires: table_tips

-- Every retirement and every restore, with the evidence that justified it: eviction is
-- reversible (tips.retired_at is the state, this is the history), and a restored tip is judged
-- afresh only on evidence newer than its restore.
BEGIN;

CREATE TABLE ctxgraph.tip_evictions (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    skill       text NOT NULL,
    tip_id      bigint NOT NULL,
    retired_at  timestamptz NOT NULL,
    reason      text NOT NULL,
    evidence    jsonb NOT NULL,
    restored_at timestamptz,
    FOREIGN KEY (skill, tip_id) REFERENCES ctxgraph.tips (skill, id) ON DELETE CASCADE,
    CONSTRAINT tip_evictions_restored_after_retired CHECK (restored_at IS NULL OR restored_at >= retired_at)
);

CREATE INDEX tip_evictions_tip_idx ON ctxgraph.tip_evictions (skill, tip_id, retired_at);

COMMENT ON TABLE ctxgraph.tip_evictions IS 'History of tip retirements by ctxgraph.evict_tips and restores by ctxgraph.restore_tip.';
COMMENT ON COLUMN ctxgraph.tip_evictions.id IS 'Row id.';
COMMENT ON COLUMN ctxgraph.tip_evictions.skill IS 'The skill.';
COMMENT ON COLUMN ctxgraph.tip_evictions.tip_id IS 'The retired tip.';
COMMENT ON COLUMN ctxgraph.tip_evictions.retired_at IS 'The as_of instant of the eviction run that retired it.';
COMMENT ON COLUMN ctxgraph.tip_evictions.reason IS 'Why, in words.';
COMMENT ON COLUMN ctxgraph.tip_evictions.evidence IS 'The evidence row of ctxgraph.tip_evidence at that moment.';
COMMENT ON COLUMN ctxgraph.tip_evictions.restored_at IS 'When ctxgraph.restore_tip undid the retirement; NULL while retired.';

GRANT SELECT ON ctxgraph.tip_evictions TO ctxgraph_ranker, ctxgraph_analyst;

COMMIT;
