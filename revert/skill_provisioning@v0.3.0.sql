-- Revert ctxgraph:skill_provisioning from pg

BEGIN;

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
