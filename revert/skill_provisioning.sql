-- Revert ctxgraph:skill_provisioning from pg

-- Back to @v0.5.0: drop_skill(NULL) raises 22023 (unknown skill); partitions at the default
-- fillfactor; the foreign keys between skill-partitioned tables declared on the parents again.
BEGIN;

-- Each skill's copy of a key goes first: the parent's key takes the same name on every partition.
DO $$
DECLARE
    skill_key record;
BEGIN
    FOR skill_key IN
        SELECT c.conrelid::regclass AS child, c.conname
          FROM ctxgraph._skill_partition_keys() AS k
          JOIN pg_catalog.pg_inherits AS i ON i.inhparent = k.parent
          JOIN pg_catalog.pg_constraint AS c ON c.conrelid = i.inhrelid AND c.conname = k.name AND c.conparentid = 0
    LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', skill_key.child, skill_key.conname);
    END LOOP;
    FOR skill_key IN SELECT * FROM ctxgraph._skill_partition_keys() LOOP
        EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I FOREIGN KEY (%s) REFERENCES %s (%s) ON DELETE %s',
                       skill_key.parent, skill_key.name, skill_key.columns, skill_key.referenced,
                       skill_key.referenced_columns, skill_key.on_delete);
    END LOOP;
END
$$;

DROP FUNCTION ctxgraph._skill_partition_keys();

-- ctxgraph.drop_skill: removes a skill with all its rows. For reverts and administrators only.
-- A plain DROP SCHEMA ... CASCADE would also drop the parents' foreign keys (they depend on every
-- referenced partition), silently unkeying the other skills. So: delete the skill's rows from the
-- unpartitioned ctxgraph tables that carry a skill column, then detach and drop each partition,
-- referencing tables first, and only then drop the schema (its views).
CREATE OR REPLACE FUNCTION ctxgraph.drop_skill(name text)
RETURNS void
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    tab    regclass;
    parent regclass;
    child  regclass;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM ctxgraph.skills AS s WHERE s.name = drop_skill.name) THEN
        RAISE EXCEPTION 'ctxgraph: unknown skill %', coalesce(quote_literal(drop_skill.name), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR tab IN
        SELECT c.oid::regclass
          FROM pg_catalog.pg_class AS c
          JOIN pg_catalog.pg_attribute AS a ON a.attrelid = c.oid AND a.attname = 'skill' AND NOT a.attisdropped
         WHERE c.relnamespace = 'ctxgraph'::regnamespace AND c.relkind = 'r' AND NOT c.relispartition
           AND c.oid <> 'ctxgraph.skills'::regclass
         ORDER BY c.oid DESC
    LOOP
        EXECUTE format('DELETE FROM %s WHERE skill = %L', tab, drop_skill.name);
    END LOOP;
    FOR parent IN SELECT p FROM ctxgraph._skill_parent_tables() AS p ORDER BY p::oid DESC LOOP
        child := pg_catalog.to_regclass(format('%I.%I', drop_skill.name,
                                               (SELECT relname FROM pg_catalog.pg_class WHERE oid = parent)));
        IF child IS NOT NULL THEN
            EXECUTE format('ALTER TABLE %s DETACH PARTITION %s', parent, child);
            EXECUTE format('DROP TABLE %s', child);
        END IF;
    END LOOP;
    EXECUTE format('DROP SCHEMA %I CASCADE', drop_skill.name);
    DELETE FROM ctxgraph.skills AS s WHERE s.name = drop_skill.name;
END
$$;

COMMENT ON FUNCTION ctxgraph.drop_skill(text) IS
    'Drops a skill''s schema with all its rows and unregisters it. Irreversible: meant for reverts.';

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
            PERFORM ctxgraph._copy_comments(parent, child, skill_name);
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


DO $$
DECLARE
    child regclass;
BEGIN
    FOR child IN
        SELECT i.inhrelid::regclass FROM pg_catalog.pg_inherits AS i
         WHERE ctxgraph._skill_partition_fillfactor(i.inhparent::regclass) IS NOT NULL
    LOOP
        EXECUTE format('ALTER TABLE %s RESET (fillfactor)', child);
    END LOOP;
END
$$;

DROP FUNCTION ctxgraph._skill_partition_fillfactor(regclass);

COMMIT;
