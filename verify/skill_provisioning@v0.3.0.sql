-- Verify ctxgraph:skill_provisioning on pg

SELECT name, added_at FROM ctxgraph.skill_views WHERE FALSE;
SELECT 'ctxgraph.add_skill(text, text, text)'::regprocedure;
SELECT 'ctxgraph.drop_skill(text)'::regprocedure;
SELECT 'ctxgraph.ensure_skill_partitions(text)'::regprocedure;
SELECT 'ctxgraph.sync_skill_privileges(text)'::regprocedure;
SELECT 'ctxgraph.expose_skill_view(text)'::regprocedure;
SELECT 'ctxgraph.unexpose_skill_view(text)'::regprocedure;
SELECT 'ctxgraph._skill_parent_tables()'::regprocedure;

-- The parents of this change's time are found (later changes may add more).
SELECT 1 / (COUNT(*) = 4)::int FROM ctxgraph._skill_parent_tables() AS p
 WHERE p IN ('ctxgraph.runs'::regclass, 'ctxgraph.attempts'::regclass, 'ctxgraph.tips'::regclass,
             'ctxgraph.tip_retrievals'::regclass);
-- Schema-changing functions are the owner's alone.
SELECT 1 / (COUNT(*) = 0)::int
  FROM (VALUES ('ctxgraph.add_skill(text, text, text)'), ('ctxgraph.drop_skill(text)'),
               ('ctxgraph.ensure_skill_partitions(text)'), ('ctxgraph.sync_skill_privileges(text)'),
               ('ctxgraph.expose_skill_view(text)'), ('ctxgraph.unexpose_skill_view(text)')) AS f (sig)
 WHERE pg_catalog.has_function_privilege('public', f.sig::regprocedure, 'EXECUTE')
    OR pg_catalog.has_function_privilege('ctxgraph_writer', f.sig::regprocedure, 'EXECUTE');

-- Behaviour, rolled back: add_skill makes a schema with a partition of every skill parent (with
-- the skill as default and the parent's privileges), the registered views, and schema usage for
-- the group roles; bad calls raise; drop_skill removes it all again.
BEGIN;
SELECT ctxgraph.add_skill('sqitch_verify_probe', 'binary', 'sqitch verify probe');
DO $$
DECLARE
    parent regclass;
    child  regclass;
    view_name text;
    probe  record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM ctxgraph.skills WHERE name = 'sqitch_verify_probe' AND grading = 'binary') THEN
        RAISE EXCEPTION 'add_skill did not register the skill';
    END IF;
    FOR parent IN SELECT ctxgraph._skill_parent_tables() LOOP
        child := pg_catalog.to_regclass('sqitch_verify_probe.' || (SELECT relname FROM pg_catalog.pg_class WHERE oid = parent));
        IF child IS NULL OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits WHERE inhparent = parent AND inhrelid = child)
           OR pg_catalog.pg_get_expr((SELECT adbin FROM pg_catalog.pg_attrdef AS d JOIN pg_catalog.pg_attribute AS a
                                         ON a.attrelid = d.adrelid AND a.attnum = d.adnum
                                      WHERE d.adrelid = child AND a.attname = 'skill'), child) <> '''sqitch_verify_probe''::text'
           OR EXISTS (SELECT 1 FROM pg_catalog.pg_roles AS r
                       CROSS JOIN (VALUES ('SELECT'), ('INSERT'), ('UPDATE'), ('DELETE')) AS p (priv)
                       WHERE r.rolname IN ('ctxgraph_writer', 'ctxgraph_scorer', 'ctxgraph_ranker', 'ctxgraph_analyst')
                         AND pg_catalog.has_table_privilege(r.oid, parent, p.priv)
                             <> pg_catalog.has_table_privilege(r.oid, child, p.priv)) THEN
            RAISE EXCEPTION 'add_skill: no proper partition of % (%)', parent, child;
        END IF;
    END LOOP;
    FOR view_name IN SELECT name FROM ctxgraph.skill_views LOOP
        IF pg_catalog.to_regclass('sqitch_verify_probe.' || quote_ident(view_name)) IS NULL THEN
            RAISE EXCEPTION 'add_skill did not create the view %', view_name;
        END IF;
    END LOOP;
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles AS r
                WHERE r.rolname IN ('ctxgraph_writer', 'ctxgraph_scorer', 'ctxgraph_ranker', 'ctxgraph_analyst')
                  AND NOT pg_catalog.has_schema_privilege(r.oid, 'sqitch_verify_probe', 'USAGE')) THEN
        RAISE EXCEPTION 'add_skill did not grant schema usage';
    END IF;

    FOR probe IN SELECT * FROM (VALUES
        ('42P06', $q$SELECT ctxgraph.add_skill('sqitch_verify_probe', 'binary')$q$),
        ('22023', $q$SELECT ctxgraph.add_skill('sqitch_verify_probe2', 'sometimes')$q$),
        ('22004', $q$SELECT ctxgraph.add_skill(NULL, 'binary')$q$),
        ('23514', $q$SELECT ctxgraph.add_skill('pg_probe', 'binary')$q$),
        ('22023', $q$SELECT ctxgraph.drop_skill('sqitch_verify_no_such_skill')$q$)
    ) AS p (sqlstate, statement) LOOP
        BEGIN
            EXECUTE probe.statement;
            RAISE EXCEPTION 'no error' USING ERRCODE = 'VRFY1';
        EXCEPTION WHEN OTHERS THEN
            IF SQLSTATE <> probe.sqlstate THEN
                RAISE EXCEPTION 'expected SQLSTATE % from %, got % (%)', probe.sqlstate, probe.statement, SQLSTATE, SQLERRM;
            END IF;
        END;
    END LOOP;

    PERFORM ctxgraph.drop_skill('sqitch_verify_probe');
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'sqitch_verify_probe')
       OR EXISTS (SELECT 1 FROM ctxgraph.skills WHERE name = 'sqitch_verify_probe') THEN
        RAISE EXCEPTION 'drop_skill left the skill behind';
    END IF;
END
$$;
ROLLBACK;
