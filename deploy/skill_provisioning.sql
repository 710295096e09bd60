-- Deploy ctxgraph:skill_provisioning to pg
-- requires: skill_provisioning@v0.5.0

-- Rework: drop_skill(NULL) is a missing argument, 22004 as for every other NULL argument; released,
-- it said "unknown skill NULL" (22023). And ensure_skill_partitions gives the partitions of the
-- maintained levels room for in-place updates (fillfactor 85), existing skills' partitions too
-- (their full pages fill the new way as rows move). And the foreign keys from one skill-partitioned
-- table to another are declared between each skill's partitions instead of between the parents
-- (_skill_partition_keys), which makes every row's check several times cheaper.
BEGIN;

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
    IF drop_skill.name IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: skill must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM ctxgraph.skills AS s WHERE s.name = drop_skill.name) THEN
        RAISE EXCEPTION 'ctxgraph: unknown skill %', quote_literal(drop_skill.name)
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

-- ctxgraph._skill_partition_fillfactor: the fillfactor of a parent's partitions, NULL for the
-- default (100). The maintained levels (tip_stats and the levels behind it) are rewritten in place
-- by nearly every write, each row moved by a difference: with room left on each page the new
-- version of a row stays on its page and no index entry is written (a HOT update, which needs an
-- unchanged indexed column and free space on the page). A scorer write-back of 3,500 rows at 1M
-- retrievals spent 135 ms on these levels with full pages and 88 ms with 15% left free.
CREATE FUNCTION ctxgraph._skill_partition_fillfactor(parent regclass)
RETURNS integer
LANGUAGE sql STABLE
AS $$
    SELECT 85
     WHERE parent = ANY (ARRAY[pg_catalog.to_regclass('ctxgraph.tip_stats'),
                               pg_catalog.to_regclass('ctxgraph.tip_attempt_stats'),
                               pg_catalog.to_regclass('ctxgraph.tip_rule_stats'),
                               pg_catalog.to_regclass('ctxgraph.tip_run_stats'),
                               pg_catalog.to_regclass('ctxgraph.rule_attempt_stats'),
                               pg_catalog.to_regclass('ctxgraph.rule_stats')])
$$;

COMMENT ON FUNCTION ctxgraph._skill_partition_fillfactor(regclass) IS
    'Private: the fillfactor ensure_skill_partitions gives a parent''s partitions (85 for the maintained levels, updated in place by every write), NULL for the default.';
REVOKE ALL ON FUNCTION ctxgraph._skill_partition_fillfactor(regclass) FROM PUBLIC;

-- ctxgraph._skill_partition_keys: the foreign keys declared between each skill's partitions
-- (stig.tip_stats to stig.tips, ...) rather than between the parents: those of the maintained levels,
-- written by every write and every rebuild. A key from one partitioned parent to another is
-- checked for every row through the referenced parent: a generic plan that prunes to the skill's
-- partition at run time. That cost 18 to 24 us a row against 4 to 6 us for the same key between the
-- two partitions (rebuilding tip_run_stats at 1M retrievals, 754,000 rows: 23.1 s against 10.8 s;
-- the full rebuild's foreign-key checks, about 38 s of its 62 s). Each key carries skill, the
-- partition key on both sides, so a row could only ever reference a row of its own skill's
-- partition: the rows allowed are the same. ensure_skill_partitions declares them for every skill.
CREATE FUNCTION ctxgraph._skill_partition_keys()
RETURNS TABLE (parent regclass, name text, columns text, referenced regclass, referenced_columns text,
               on_delete text)
LANGUAGE sql STABLE
AS $$
    SELECT pg_catalog.to_regclass(k.parent), k.name, k.columns, pg_catalog.to_regclass(k.referenced),
           k.referenced_columns, k.on_delete
      FROM (VALUES ('ctxgraph.tip_stats', 'tip_stats_skill_tip_id_fkey', 'skill, tip_id', 'ctxgraph.tips', 'skill, id', 'CASCADE'),
                   ('ctxgraph.tip_attempt_stats', 'tip_attempt_stats_skill_tip_id_fkey', 'skill, tip_id', 'ctxgraph.tips', 'skill, id', 'CASCADE'),
                   ('ctxgraph.tip_rule_stats', 'tip_rule_stats_skill_tip_id_fkey', 'skill, tip_id', 'ctxgraph.tips', 'skill, id', 'CASCADE'),
                   ('ctxgraph.tip_run_stats', 'tip_run_stats_skill_tip_id_fkey', 'skill, tip_id', 'ctxgraph.tips', 'skill, id', 'CASCADE'))
           AS k (parent, name, columns, referenced, referenced_columns, on_delete)
     WHERE pg_catalog.to_regclass(k.parent) IS NOT NULL AND pg_catalog.to_regclass(k.referenced) IS NOT NULL
$$;

COMMENT ON FUNCTION ctxgraph._skill_partition_keys() IS
    'Private: the foreign keys ensure_skill_partitions declares between each skill''s partitions (the parents hold none of them): table, constraint name, columns, referenced table and columns, ON DELETE action.';
REVOKE ALL ON FUNCTION ctxgraph._skill_partition_keys() FROM PUBLIC;

-- ctxgraph.ensure_skill_partitions: brings every skill's partitions in line with the parents:
-- creates a missing partition (a parent table added by a later change reaches existing skills),
-- copies the parent's table and column comments and its statement-level triggers (statement
-- triggers on a parent do not fire for statements aimed at a partition), gives it its parent's
-- fillfactor (_skill_partition_fillfactor: a partitioned parent cannot hold one), declares the
-- foreign keys between the skill's partitions (_skill_partition_keys), then syncs privileges.
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
    fill       integer;
    has_rows   boolean;
    skill_key  record;
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
            fill := ctxgraph._skill_partition_fillfactor(parent);
            IF fill IS NOT NULL AND NOT coalesce((SELECT c.reloptions FROM pg_catalog.pg_class AS c WHERE c.oid = child)
                                                 @> ARRAY['fillfactor=' || fill], false) THEN
                EXECUTE format('ALTER TABLE %s SET (fillfactor = %s)', child, fill);
                -- A fillfactor only shapes pages written from now on. Rows already there (an
                -- upgrade's levels, rebuilt before this change) sit on full pages where no update is
                -- HOT: rewrite them once at the new fillfactor (CLUSTER on the primary key, which may
                -- run in a transaction; the clustering mark it leaves is taken off again).
                EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', child) INTO has_rows;
                IF has_rows THEN
                    EXECUTE format('CLUSTER %s USING %I', child,
                                   (SELECT c.relname FROM pg_catalog.pg_index AS i
                                      JOIN pg_catalog.pg_class AS c ON c.oid = i.indexrelid
                                     WHERE i.indrelid = child AND i.indisprimary));
                    EXECUTE format('ALTER TABLE %s SET WITHOUT CLUSTER', child);
                END IF;
            END IF;
        END LOOP;
        -- Every partition of the skill exists now: the keys between them. Adding one checks the
        -- rows already there in one pass.
        FOR skill_key IN
            SELECT k.name, k.columns, k.referenced_columns, k.on_delete,
                   pg_catalog.to_regclass(format('%I.%I', skill_name, p.relname)) AS child,
                   pg_catalog.to_regclass(format('%I.%I', skill_name, r.relname)) AS referenced_child
              FROM ctxgraph._skill_partition_keys() AS k
              JOIN pg_catalog.pg_class AS p ON p.oid = k.parent
              JOIN pg_catalog.pg_class AS r ON r.oid = k.referenced
        LOOP
            CONTINUE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_constraint AS c
                                   WHERE c.conrelid = skill_key.child AND c.conname = skill_key.name);
            EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I FOREIGN KEY (%s) REFERENCES %s (%s) ON DELETE %s',
                           skill_key.child, skill_key.name, skill_key.columns, skill_key.referenced_child,
                           skill_key.referenced_columns, skill_key.on_delete);
        END LOOP;
        PERFORM ctxgraph.sync_skill_privileges(skill_name);
    END LOOP;
    RETURN created;
END
$$;

COMMENT ON FUNCTION ctxgraph.ensure_skill_partitions(text) IS
    'Creates missing skill partitions and gives every partition its parent''s comments, statement triggers, fillfactor and privileges, and the foreign keys between the skill''s partitions (_skill_partition_keys); returns the partitions created.';

-- The parents' keys go; ensure_skill_partitions declares them between every skill's partitions, in
-- the same transaction, so no row goes unchecked in between.
DO $$
DECLARE
    parent_key record;
BEGIN
    FOR parent_key IN SELECT k.parent, k.name FROM ctxgraph._skill_partition_keys() AS k LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT IF EXISTS %I', parent_key.parent, parent_key.name);
    END LOOP;
END
$$;

DO $$ BEGIN PERFORM ctxgraph.ensure_skill_partitions(); END $$;

COMMIT;
