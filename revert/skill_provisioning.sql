-- Revert ctxgraph:skill_provisioning from pg

-- Back to @v0.5.0: drop_skill(NULL) raises 22023 (unknown skill).
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

COMMIT;
