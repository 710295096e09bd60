-- Deploy ctxgraph:table_tips to pg
-- requires: table_skills
-- requires: extension_vector

BEGIN;

CREATE SEQUENCE ctxgraph.tips_id_seq AS bigint;

CREATE TABLE ctxgraph.tips (
    skill      text NOT NULL REFERENCES ctxgraph.skills (name),
    id         bigint NOT NULL DEFAULT nextval('ctxgraph.tips_id_seq'),
    rule_id    text,
    body       text NOT NULL CHECK (btrim(body) <> ''),
    embedding  vector(384),
    created_at timestamptz NOT NULL DEFAULT now(),
    retired_at timestamptz,
    PRIMARY KEY (skill, id)
) PARTITION BY LIST (skill);

ALTER SEQUENCE ctxgraph.tips_id_seq OWNED BY ctxgraph.tips.id;

CREATE INDEX tips_rule_id_idx ON ctxgraph.tips (skill, rule_id);

COMMENT ON TABLE ctxgraph.tips IS 'Advice texts in the agent''s memory, all skills; rows live in <skill>.tips.';
COMMENT ON COLUMN ctxgraph.tips.skill IS 'The skill (partition key).';
COMMENT ON COLUMN ctxgraph.tips.id IS 'Tip id.';
COMMENT ON COLUMN ctxgraph.tips.rule_id IS 'The rule the tip was learned on; NULL for general tips.';
COMMENT ON COLUMN ctxgraph.tips.body IS 'The tip text the Worker sees.';
COMMENT ON COLUMN ctxgraph.tips.embedding IS 'all-MiniLM-L6-v2 vector of body (384 dims); a cache the scoring pass fills where missing.';
COMMENT ON COLUMN ctxgraph.tips.created_at IS 'When the tip entered memory.';
COMMENT ON COLUMN ctxgraph.tips.retired_at IS 'When eviction retired the tip; NULL while active. Retiring never deletes.';

GRANT SELECT, INSERT ON ctxgraph.tips TO ctxgraph_writer;
GRANT USAGE ON SEQUENCE ctxgraph.tips_id_seq TO ctxgraph_writer;
GRANT SELECT ON ctxgraph.tips TO ctxgraph_scorer, ctxgraph_ranker, ctxgraph_analyst;
-- The embedding is the scorer's cache of body: it may fill it, nothing else.
GRANT UPDATE (embedding) ON ctxgraph.tips TO ctxgraph_scorer;

COMMIT;
