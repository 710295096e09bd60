-- Deploy ctxgraph:privileges_functions to pg
-- requires: table_group_roles
-- requires: function_follow_label_metrics

-- PostgreSQL lets PUBLIC execute every new function. ctxgraph's functions are granted to the roles
-- that need them (README, "Roles"); nothing is left to PUBLIC, so a login role with no ctxgraph
-- role cannot call, say, the SECURITY DEFINER tip_evidence and read the log through it. A loop
-- rather than a list, so a database deployed at an earlier tag loses every stray grant too.
BEGIN;

DO $$
DECLARE
    fn regprocedure;
BEGIN
    FOR fn IN
        SELECT p.oid::regprocedure
          FROM pg_catalog.pg_proc AS p
         WHERE p.pronamespace = 'ctxgraph'::regnamespace
           AND (p.proacl IS NULL
                OR EXISTS (SELECT 1 FROM pg_catalog.aclexplode(p.proacl) AS x WHERE x.grantee = 0))
         ORDER BY p.oid
    LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', fn);
    END LOOP;
END
$$;

COMMIT;
