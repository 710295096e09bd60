-- Deploy ctxgraph:table_skills to pg
-- requires: schema_ctxgraph

-- The skills registry: one row per skill schema. grading decides how ctxgraph.graded_outcome
-- scores an attempt (ADR-0019 DEF-26: stig graded, cve binary until it shows the same pattern).
BEGIN;

CREATE TABLE ctxgraph.skills (
    name        text PRIMARY KEY
                CHECK (name ~ '^[a-z][a-z0-9_]{0,30}$'
                       AND name NOT IN ('ctxgraph', 'public', 'tests', 'sqitch', 'information_schema')
                       AND name !~ '^pg_'),
    grading     text NOT NULL CHECK (grading IN ('graded', 'binary')),
    description text,
    created_at  timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE ctxgraph.skills IS
    'Registered skills; each has its own schema holding its partitions of the ctxgraph tables. Add one with ctxgraph.add_skill().';
COMMENT ON COLUMN ctxgraph.skills.name IS 'Skill name, also the name of its schema.';
COMMENT ON COLUMN ctxgraph.skills.grading IS 'graded: DEF-26 graded outcomes by attempt and failure mode; binary: passed 1.0, failed 0.0.';
COMMENT ON COLUMN ctxgraph.skills.description IS 'What the skill fixes.';
COMMENT ON COLUMN ctxgraph.skills.created_at IS 'When the skill was registered.';

GRANT SELECT ON ctxgraph.skills TO ctxgraph_writer, ctxgraph_scorer, ctxgraph_ranker, ctxgraph_analyst;

COMMIT;
