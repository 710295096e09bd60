-- Revert ctxgraph:skill_provisioning from pg

-- Back to the definitions released at @v0.3.0: the same functions replaced with their
-- earlier bodies, and _copy_comments (new in the rework) dropped once nothing calls it.

-- One way to add a skill: ctxgraph.add_skill() creates the skill's schema, a partition of every
-- skill-partitioned parent table in schema ctxgraph, the per-skill projections of the registered
-- views, and the same privileges as the parents. Nothing here names a table: a parent table or a
-- view added by a later change reaches every skill, present and future.
BEGIN;

-- The skill-partitioned parent tables: list-partitioned on a column named skill.
CREATE OR REPLACE FUNCTION ctxgraph._skill_parent_tables()
RETURNS SETOF regclass
LANGUAGE sql STABLE
AS $$
    SELECT pt.partrelid::regclass
      FROM pg_catalog.pg_partitioned_table AS pt
      JOIN pg_catalog.pg_class AS c ON c.oid = pt.partrelid
      JOIN pg_catalog.pg_attribute AS a ON a.attrelid = pt.partrelid AND a.attnum = pt.partattrs[0]
     WHERE c.relnamespace = 'ctxgraph'::regnamespace
       AND pt.partstrat = 'l'
       AND a.attname = 'skill'
     ORDER BY c.oid
$$;

COMMENT ON FUNCTION ctxgraph._skill_parent_tables() IS
    'Private: the parent tables in schema ctxgraph that are list-partitioned by skill.';

-- ctxgraph.sync_skill_privileges: makes each skill partition's table and column privileges
-- exactly those of its parent. Privileges on a parent do not apply to direct reads of a
-- partition, and users query <skill>.<table> directly.
CREATE OR REPLACE FUNCTION ctxgraph.sync_skill_privileges(skill text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    part      record;
    grant_row record;
    synced    integer := 0;
BEGIN
    FOR part IN
        SELECT i.inhparent AS parent, i.inhrelid::regclass AS child, c.relowner
          FROM pg_catalog.pg_inherits AS i
          JOIN pg_catalog.pg_class AS c ON c.oid = i.inhrelid
         WHERE i.inhparent IN (SELECT ctxgraph._skill_parent_tables())
           AND (sync_skill_privileges.skill IS NULL
                OR c.relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = sync_skill_privileges.skill))
    LOOP
        -- Start from nothing: a table-level REVOKE ALL also revokes column privileges.
        FOR grant_row IN
            SELECT DISTINCT x.grantee
              FROM pg_catalog.pg_class AS c, pg_catalog.aclexplode(c.relacl) AS x
             WHERE c.oid = part.child AND x.grantee <> part.relowner
            UNION
            SELECT DISTINCT x.grantee
              FROM pg_catalog.pg_attribute AS a, pg_catalog.aclexplode(a.attacl) AS x
             WHERE a.attrelid = part.child AND x.grantee <> part.relowner
        LOOP
            EXECUTE format('REVOKE ALL ON %s FROM %s', part.child, ctxgraph._grantee_sql(grant_row.grantee));
        END LOOP;

        FOR grant_row IN
            SELECT x.grantee, x.privilege_type
              FROM pg_catalog.pg_class AS c, pg_catalog.aclexplode(c.relacl) AS x
             WHERE c.oid = part.parent AND x.grantee <> c.relowner
        LOOP
            EXECUTE format('GRANT %s ON %s TO %s', grant_row.privilege_type, part.child,
                           ctxgraph._grantee_sql(grant_row.grantee));
        END LOOP;

        FOR grant_row IN
            SELECT a.attname, x.grantee, x.privilege_type
              FROM pg_catalog.pg_attribute AS a, pg_catalog.aclexplode(a.attacl) AS x
             WHERE a.attrelid = part.parent AND NOT a.attisdropped
        LOOP
            EXECUTE format('GRANT %s (%I) ON %s TO %s', grant_row.privilege_type, grant_row.attname,
                           part.child, ctxgraph._grantee_sql(grant_row.grantee));
        END LOOP;
        synced := synced + 1;
    END LOOP;
    RETURN synced;
END
$$;

CREATE OR REPLACE FUNCTION ctxgraph._grantee_sql(grantee oid)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT CASE WHEN grantee = 0 THEN 'PUBLIC'
                ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(grantee)) END
$$;

COMMENT ON FUNCTION ctxgraph._grantee_sql(oid) IS 'Private: a role oid (0 for PUBLIC) as it is written in GRANT.';
COMMENT ON FUNCTION ctxgraph.sync_skill_privileges(text) IS
    'Gives every partition of the skill tables (of one skill, or all when NULL) exactly its parent''s table and column privileges; returns the partitions synced.';

-- One per-skill projection of a registered view: every column but skill, filtered to the skill.
CREATE OR REPLACE FUNCTION ctxgraph._create_skill_view(skill text, view_name text)
RETURNS void
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    source_view regclass := format('ctxgraph.%I', view_name)::regclass;
    column_list text;
    target      text := format('%I.%I', skill, view_name);
    grant_row   record;
BEGIN
    SELECT string_agg(format('%I', a.attname), ', ' ORDER BY a.attnum) INTO column_list
      FROM pg_catalog.pg_attribute AS a
     WHERE a.attrelid = source_view AND a.attnum > 0 AND NOT a.attisdropped AND a.attname <> 'skill';
    EXECUTE format('CREATE VIEW %s AS SELECT %s FROM %s WHERE skill = %L',
                   target, column_list, source_view, skill);
    EXECUTE format('COMMENT ON VIEW %s IS %L', target,
                   coalesce(pg_catalog.obj_description(source_view, 'pg_class'), '') || format(' (skill %s)', skill));
    FOR grant_row IN
        SELECT a.attname, d.description
          FROM pg_catalog.pg_attribute AS a
          JOIN pg_catalog.pg_description AS d
            ON d.objoid = source_view AND d.classoid = 'pg_catalog.pg_class'::regclass AND d.objsubid = a.attnum
         WHERE a.attrelid = source_view AND a.attname <> 'skill'
    LOOP
        EXECUTE format('COMMENT ON COLUMN %s.%I IS %L', target, grant_row.attname, grant_row.description);
    END LOOP;
    FOR grant_row IN
        SELECT x.grantee, x.privilege_type
          FROM pg_catalog.pg_class AS c, pg_catalog.aclexplode(c.relacl) AS x
         WHERE c.oid = source_view AND x.grantee <> c.relowner
    LOOP
        EXECUTE format('GRANT %s ON %s TO %s', grant_row.privilege_type, target,
                       ctxgraph._grantee_sql(grant_row.grantee));
    END LOOP;
END
$$;

COMMENT ON FUNCTION ctxgraph._create_skill_view(text, text) IS
    'Private: creates <skill>.<view_name> over ctxgraph.<view_name> with its comments and grants.';

-- ctxgraph.expose_skill_view: registers a ctxgraph view and creates its projection in every skill.
CREATE OR REPLACE FUNCTION ctxgraph.expose_skill_view(view_name text)
RETURNS void
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    skill_name text;
BEGIN
    INSERT INTO ctxgraph.skill_views (name) VALUES (view_name);
    FOR skill_name IN SELECT name FROM ctxgraph.skills ORDER BY name LOOP
        PERFORM ctxgraph._create_skill_view(skill_name, view_name);
    END LOOP;
END
$$;

-- ctxgraph.unexpose_skill_view: the inverse, for reverts and reworks of the view.
CREATE OR REPLACE FUNCTION ctxgraph.unexpose_skill_view(view_name text)
RETURNS void
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    skill_name text;
BEGIN
    FOR skill_name IN SELECT name FROM ctxgraph.skills ORDER BY name LOOP
        EXECUTE format('DROP VIEW IF EXISTS %I.%I', skill_name, view_name);
    END LOOP;
    DELETE FROM ctxgraph.skill_views WHERE name = view_name;
END
$$;

COMMENT ON FUNCTION ctxgraph.expose_skill_view(text) IS
    'Registers ctxgraph.<view_name> and creates <skill>.<view_name> in every skill schema (and in skills added later).';
COMMENT ON FUNCTION ctxgraph.unexpose_skill_view(text) IS
    'Drops every <skill>.<view_name> projection and unregisters the view.';

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

-- ctxgraph.add_skill: the one way to add a skill; no DDL is copied by hand.
CREATE OR REPLACE FUNCTION ctxgraph.add_skill(name text, grading text, description text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    view_name text;
BEGIN
    IF add_skill.name IS NULL OR add_skill.grading IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: add_skill needs a name and a grading'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF add_skill.grading NOT IN ('graded', 'binary') THEN
        RAISE EXCEPTION 'ctxgraph: grading must be ''graded'' or ''binary'', got %', quote_literal(add_skill.grading)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = add_skill.name) THEN
        RAISE EXCEPTION 'ctxgraph: schema % already exists', quote_ident(add_skill.name)
            USING ERRCODE = 'duplicate_schema';
    END IF;
    -- The registry's CHECK rejects names that are not plain lower-case identifiers.
    INSERT INTO ctxgraph.skills (name, grading, description)
    VALUES (add_skill.name, add_skill.grading, add_skill.description);

    EXECUTE format('CREATE SCHEMA %I', add_skill.name);
    EXECUTE format('COMMENT ON SCHEMA %I IS %L', add_skill.name,
                   format('ctxgraph skill %s (%s outcomes): its partitions of the ctxgraph tables and its views.',
                          add_skill.name, add_skill.grading));
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO ctxgraph_writer, ctxgraph_scorer, ctxgraph_ranker, ctxgraph_analyst',
                   add_skill.name);

    PERFORM ctxgraph.ensure_skill_partitions(add_skill.name);

    FOR view_name IN SELECT v.name FROM ctxgraph.skill_views AS v ORDER BY v.added_at, v.name LOOP
        PERFORM ctxgraph._create_skill_view(add_skill.name, view_name);
    END LOOP;
END
$$;

COMMENT ON FUNCTION ctxgraph.add_skill(text, text, text) IS
    'Registers a skill and creates its schema: a partition of every ctxgraph table, the registered views, and the parents'' privileges.';

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

REVOKE ALL ON FUNCTION ctxgraph.add_skill(text, text, text), ctxgraph.drop_skill(text),
    ctxgraph.sync_skill_privileges(text), ctxgraph.expose_skill_view(text),
    ctxgraph.unexpose_skill_view(text), ctxgraph._create_skill_view(text, text),
    ctxgraph.ensure_skill_partitions(text),
    ctxgraph._skill_parent_tables(), ctxgraph._grantee_sql(oid) FROM PUBLIC;

DROP FUNCTION ctxgraph._copy_comments(regclass, regclass, text);

COMMIT;
