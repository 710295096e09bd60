-- Revert ctxgraph:skill_provisioning from pg

BEGIN;

-- Every skill add_skill made and no later revert removed (stig and cve have their own changes)
-- goes with the function that made it: left behind, its schema would outlive every table and
-- make add_skill of the same name fail with 42P06 after a redeploy.
DO $$
DECLARE
    name text;
BEGIN
    FOR name IN SELECT s.name FROM ctxgraph.skills AS s ORDER BY s.name LOOP
        PERFORM ctxgraph.drop_skill(name);
    END LOOP;
END
$$;

DROP FUNCTION ctxgraph.drop_skill(text);
DROP FUNCTION ctxgraph.add_skill(text, text, text);
DROP FUNCTION ctxgraph.ensure_skill_partitions(text);
DROP FUNCTION ctxgraph.unexpose_skill_view(text);
DROP FUNCTION ctxgraph.expose_skill_view(text);
DROP FUNCTION ctxgraph._create_skill_view(text, text);
DROP FUNCTION ctxgraph.sync_skill_privileges(text);
DROP FUNCTION ctxgraph._grantee_sql(oid);
DROP FUNCTION ctxgraph._skill_parent_tables();
DROP TABLE ctxgraph.skill_views;

COMMIT;
