-- Revert ctxgraph:table_tip_retrievals from pg

-- Back to @v0.5.0: the log's keys into the skills registry, runs, attempts and tips declared on the
-- parent again; _skill_partition_keys lists the maintained levels' keys only, as skill_provisioning
-- made it.
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
         WHERE k.parent = 'ctxgraph.tip_retrievals'::regclass
    LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', skill_key.child, skill_key.conname);
    END LOOP;
END
$$;

ALTER TABLE ctxgraph.tip_retrievals
    ADD CONSTRAINT tip_retrievals_skill_fkey FOREIGN KEY (skill) REFERENCES ctxgraph.skills (name),
    ADD CONSTRAINT tip_retrievals_skill_run_id_fkey FOREIGN KEY (skill, run_id) REFERENCES ctxgraph.runs (skill, id),
    ADD CONSTRAINT tip_retrievals_skill_attempt_id_fkey FOREIGN KEY (skill, attempt_id) REFERENCES ctxgraph.attempts (skill, id),
    ADD CONSTRAINT tip_retrievals_skill_tip_id_fkey FOREIGN KEY (skill, tip_id) REFERENCES ctxgraph.tips (skill, id);

CREATE OR REPLACE FUNCTION ctxgraph._skill_partition_keys()
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

COMMIT;
