-- Verify ctxgraph:skill_provisioning on pg

SELECT name, added_at FROM ctxgraph.skill_views WHERE FALSE;
SELECT 'ctxgraph.add_skill(text, text, text)'::regprocedure, 'ctxgraph.drop_skill(text)'::regprocedure,
       'ctxgraph.ensure_skill_partitions(text)'::regprocedure, 'ctxgraph.sync_skill_privileges(text)'::regprocedure,
       'ctxgraph.expose_skill_view(text)'::regprocedure, 'ctxgraph.unexpose_skill_view(text)'::regprocedure,
       'ctxgraph._copy_comments(regclass, regclass, text)'::regprocedure;
-- The four base tables are among the skill-partitioned parents (later changes may add more).
SELECT 1 / (count(*) = 4)::int
  FROM ctxgraph._skill_parent_tables() AS p
 WHERE p IN ('ctxgraph.runs'::regclass, 'ctxgraph.attempts'::regclass, 'ctxgraph.tips'::regclass,
             'ctxgraph.tip_retrievals'::regclass);
-- The keys between skill-partitioned tables are each skill's own, none on the parents.
SELECT 'ctxgraph._skill_partition_keys()'::regprocedure;
SELECT 1 / (count(*) = 0)::int
  FROM ctxgraph._skill_partition_keys() AS k
  JOIN pg_catalog.pg_constraint AS c ON c.conrelid = k.parent AND c.conname = k.name;
SELECT 1 / (count(*) = 0)::int
  FROM ctxgraph.skills AS s, ctxgraph._skill_partition_keys() AS k
 WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint AS c
                    WHERE c.contype = 'f' AND c.conname = k.name
                      AND c.conrelid = pg_catalog.to_regclass(format('%I.%I', s.name, (SELECT relname FROM pg_catalog.pg_class WHERE oid = k.parent)))
                      AND c.confrelid = pg_catalog.to_regclass(format('%I.%I', s.name, (SELECT relname FROM pg_catalog.pg_class WHERE oid = k.referenced))));
-- Behaviour, rolled back: add_skill gives a new skill a partition of every parent and every
-- registered view, with usage for every group role; drop_skill removes it and leaves the other
-- skills' foreign keys alone.
DO $$
DECLARE
    fks_before bigint;
BEGIN
    SELECT count(*) INTO fks_before FROM pg_catalog.pg_constraint WHERE contype = 'f';
    PERFORM ctxgraph.add_skill('ctxgraph_verify', 'binary');
    IF (SELECT count(*) FROM ctxgraph._skill_parent_tables() AS p
         WHERE pg_catalog.to_regclass(format('ctxgraph_verify.%I', (SELECT relname FROM pg_catalog.pg_class WHERE oid = p))) IS NULL) > 0 THEN
        RAISE EXCEPTION 'verify: add_skill left a parent without a partition';
    END IF;
    IF (SELECT count(*) FROM ctxgraph.skill_views AS v
         WHERE pg_catalog.to_regclass(format('ctxgraph_verify.%I', v.name)) IS NULL) > 0 THEN
        RAISE EXCEPTION 'verify: add_skill left a registered view unexposed';
    END IF;
    IF (SELECT count(*) FROM ctxgraph.group_roles AS g
         WHERE NOT has_schema_privilege(g.role_name, 'ctxgraph_verify', 'USAGE')) > 0 THEN
        RAISE EXCEPTION 'verify: add_skill did not grant usage to every group role';
    END IF;
    PERFORM ctxgraph.drop_skill('ctxgraph_verify');
    IF to_regnamespace('ctxgraph_verify') IS NOT NULL
       OR (SELECT count(*) FROM pg_catalog.pg_constraint WHERE contype = 'f') <> fks_before THEN
        RAISE EXCEPTION 'verify: drop_skill left the schema or changed other foreign keys';
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
SELECT 1 / (NOT has_function_privilege('ctxgraph_writer', 'ctxgraph.add_skill(text, text, text)', 'EXECUTE'))::int;

-- drop_skill(NULL) is a missing argument (22004), not an unknown skill.
DO $$
BEGIN
    PERFORM ctxgraph.drop_skill(NULL);
    RAISE EXCEPTION 'verify: drop_skill(NULL) did not raise';
EXCEPTION WHEN null_value_not_allowed THEN NULL;
END
$$;
