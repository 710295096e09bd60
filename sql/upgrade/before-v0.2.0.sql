-- Upgrade note: run once on a database deployed at @v0.1.0, before `sqitch deploy` takes it past
-- @v0.2.0:   psql -f sql/upgrade/before-v0.2.0.sql
--
-- Why: after @v0.1.0 was tagged, skill_provisioning gained ensure_skill_partitions() in place
-- instead of by a rework, and the released @v0.2.0 change table_tip_stats calls it. A database
-- deployed at @v0.1.0 therefore lacks a function the next release needs. This adds it exactly as
-- @v0.2.0 and @v0.3.0 shipped it (deploy/skill_provisioning@v0.3.0.sql); the skill_provisioning
-- rework after @v0.3.0 then replaces it with the current definition like every other function.
-- Databases deployed at @v0.2.0 or later already have it: running this there changes nothing.
BEGIN;

-- ctxgraph.ensure_skill_partitions: brings every skill's partitions in line with the parents:
-- creates a missing partition (a parent table added by a later change reaches existing skills),
-- copies the parent's table and column comments and its statement-level triggers (statement
-- triggers on a parent do not fire for statements aimed at a partition), then syncs privileges.
CREATE OR REPLACE FUNCTION ctxgraph.ensure_skill_partitions(skill text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    skill_name text;
    parent     regclass;
    child      regclass;
    created    integer := 0;
    col        record;
    trig       record;
BEGIN
    FOR skill_name IN
        SELECT s.name FROM ctxgraph.skills AS s
         WHERE ensure_skill_partitions.skill IS NULL OR s.name = ensure_skill_partitions.skill
         ORDER BY s.name
    LOOP
        FOR parent IN SELECT ctxgraph._skill_parent_tables() LOOP
            child := pg_catalog.to_regclass(format('%I.%I', skill_name,
                                                   (SELECT relname FROM pg_catalog.pg_class WHERE oid = parent)));
            IF child IS NULL THEN
                EXECUTE format('CREATE TABLE %I.%I PARTITION OF %s FOR VALUES IN (%L)', skill_name,
                               (SELECT relname FROM pg_catalog.pg_class WHERE oid = parent), parent, skill_name);
                child := pg_catalog.to_regclass(format('%I.%I', skill_name,
                                                       (SELECT relname FROM pg_catalog.pg_class WHERE oid = parent)));
                -- So that a plain INSERT INTO <skill>.<table> need not name the skill.
                EXECUTE format('ALTER TABLE %s ALTER COLUMN skill SET DEFAULT %L', child, skill_name);
                created := created + 1;
            END IF;
            EXECUTE format('COMMENT ON TABLE %s IS %L', child,
                           coalesce(pg_catalog.obj_description(parent, 'pg_class'), '') || format(' (skill %s)', skill_name));
            FOR col IN
                SELECT a.attname, d.description
                  FROM pg_catalog.pg_attribute AS a
                  JOIN pg_catalog.pg_description AS d
                    ON d.objoid = parent AND d.classoid = 'pg_catalog.pg_class'::regclass AND d.objsubid = a.attnum
                 WHERE a.attrelid = parent AND NOT a.attisdropped
            LOOP
                EXECUTE format('COMMENT ON COLUMN %s.%I IS %L', child, col.attname, col.description);
            END LOOP;
            FOR trig IN
                SELECT t.tgname, pg_catalog.pg_get_triggerdef(t.oid) AS def
                  FROM pg_catalog.pg_trigger AS t
                 WHERE t.tgrelid = parent AND NOT t.tgisinternal AND (t.tgtype & 1) = 0
                   AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger AS c
                                    WHERE c.tgrelid = child AND c.tgname = t.tgname)
            LOOP
                EXECUTE replace(trig.def, format(' ON %s ', parent), format(' ON %s ', child));
            END LOOP;
        END LOOP;
        PERFORM ctxgraph.sync_skill_privileges(skill_name);
    END LOOP;
    RETURN created;
END
$$;

COMMENT ON FUNCTION ctxgraph.ensure_skill_partitions(text) IS
    'Creates missing skill partitions and gives every partition its parent''s comments, statement triggers and privileges; returns the partitions created.';

REVOKE ALL ON FUNCTION ctxgraph.ensure_skill_partitions(text) FROM PUBLIC;

COMMIT;
