-- Revert ctxgraph:roles from pg

-- Another database in the same cluster may still use these roles: keep a role that has
-- dependents there instead of failing the revert.
BEGIN;

DO $$
DECLARE
    role_name text;
BEGIN
    FOREACH role_name IN ARRAY ARRAY['ctxgraph_analyst', 'ctxgraph_ranker', 'ctxgraph_scorer', 'ctxgraph_writer'] LOOP
        BEGIN
            EXECUTE format('DROP ROLE IF EXISTS %I', role_name);
        EXCEPTION WHEN dependent_objects_still_exist THEN
            RAISE NOTICE 'role % kept: still used by another database in this cluster', role_name;
        END;
    END LOOP;
END
$$;

COMMIT;
