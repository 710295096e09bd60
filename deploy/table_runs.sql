-- Deploy ctxgraph:table_runs to pg
-- requires: table_skills

-- The four V2 memory tables are partitioned by skill: one parent definition here, one real
-- table per skill in the skill's own schema (stig.runs, cve.runs, ...), made by ctxgraph.add_skill.
-- A third skill therefore needs no copied DDL, and a column added here (DEF-27) reaches every skill.
BEGIN;

CREATE TABLE ctxgraph.runs (
    skill      text NOT NULL REFERENCES ctxgraph.skills (name),
    id         text NOT NULL CHECK (btrim(id) <> ''),
    started_at timestamptz NOT NULL DEFAULT now(),
    ended_at   timestamptz,
    PRIMARY KEY (skill, id)
) PARTITION BY LIST (skill);

COMMENT ON TABLE ctxgraph.runs IS 'Agent runs, all skills; each skill''s rows live in <skill>.runs.';
COMMENT ON COLUMN ctxgraph.runs.skill IS 'The skill (partition key); defaults to the schema''s skill in <skill>.runs.';
COMMENT ON COLUMN ctxgraph.runs.id IS 'The run''s id as the agent names it, e.g. run-7.';
COMMENT ON COLUMN ctxgraph.runs.started_at IS 'When the run started (or was first seen by the write path).';
COMMENT ON COLUMN ctxgraph.runs.ended_at IS 'When the run ended, if known.';

GRANT SELECT, INSERT ON ctxgraph.runs TO ctxgraph_writer;
GRANT UPDATE (ended_at) ON ctxgraph.runs TO ctxgraph_writer;
GRANT SELECT ON ctxgraph.runs TO ctxgraph_scorer, ctxgraph_analyst;

COMMIT;
