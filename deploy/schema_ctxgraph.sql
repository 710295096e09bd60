-- Deploy ctxgraph:schema_ctxgraph to pg
-- requires: roles

BEGIN;

CREATE SCHEMA ctxgraph;

COMMENT ON SCHEMA ctxgraph IS
    'ctxgraph: shared functions, parameters, the skills registry and the cross-skill parent tables '
    'whose per-skill partitions live in each skill''s schema.';

GRANT USAGE ON SCHEMA ctxgraph TO ctxgraph_writer, ctxgraph_scorer, ctxgraph_ranker, ctxgraph_analyst;

COMMIT;
