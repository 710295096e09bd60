-- Verify ctxgraph:skill_provisioning on pg

SELECT name, added_at FROM ctxgraph.skill_views WHERE FALSE;
SELECT 'ctxgraph.add_skill(text, text, text)'::regprocedure;
SELECT 'ctxgraph.drop_skill(text)'::regprocedure;
SELECT 'ctxgraph.ensure_skill_partitions(text)'::regprocedure;
SELECT 'ctxgraph.sync_skill_privileges(text)'::regprocedure;
SELECT 'ctxgraph.expose_skill_view(text)'::regprocedure;
SELECT 'ctxgraph.unexpose_skill_view(text)'::regprocedure;
SELECT 1 / (COUNT(*) = 4)::int FROM ctxgraph._skill_parent_tables();
