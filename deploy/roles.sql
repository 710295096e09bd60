-- Deploy ctxgraph:roles to pg

-- Four group roles (NOLOGIN): grant them to the login roles of the agent, the scorer, the ranker
-- and the analysts. Roles are cluster-wide, so an existing role is reused rather than an error.
BEGIN;

DO $$
DECLARE
    role_name text;
BEGIN
    FOREACH role_name IN ARRAY ARRAY['ctxgraph_writer', 'ctxgraph_scorer', 'ctxgraph_ranker', 'ctxgraph_analyst'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = role_name) THEN
            EXECUTE format('CREATE ROLE %I NOLOGIN', role_name);
        END IF;
    END LOOP;
END
$$;

COMMENT ON ROLE ctxgraph_writer IS 'ctxgraph: the agent''s write path (save attempts, log and link retrievals, record outcomes).';
COMMENT ON ROLE ctxgraph_scorer IS 'ctxgraph: the scoring pass; may update only the DEF-27 follow columns and its own caches.';
COMMENT ON ROLE ctxgraph_ranker IS 'ctxgraph: the retrieval ranker and eviction readers; reads tips and the public views.';
COMMENT ON ROLE ctxgraph_analyst IS 'ctxgraph: analysts; read-only on every table and view.';

COMMIT;
