-- Deploy ctxgraph:table_tip_retrievals to pg
-- requires: table_tip_retrievals@v0.5.0
-- requires: skill_provisioning

-- Rework: the log's keys into runs, attempts and tips are declared between each skill's partitions
-- (stig.tip_retrievals to stig.runs, stig.attempts and stig.tips), as the maintained levels' keys
-- already are (_skill_partition_keys), instead of between the parents. Every row written to the
-- log is checked against three of them, and a check through a partitioned parent is a generic plan
-- pruned at run time, planned on the parent's statistics, which autovacuum never gathers. On the
-- 1M-row bench log so left, the bulk load of a 50,000-retrieval run log took 8.7 and 9.1 s with the
-- parents' keys, 6.0 and 6.5 s with the partitions' (one write-path attempt 5.9 / 5.5 ms against
-- 4.5 / 4.7 ms); with the parents analyzed by hand, 6.7 against 6.5 s (5.6 against 4.5 ms). Each
-- key carries skill, the partition key on both sides, so the rows allowed are the same.
--
-- The parent's key into the skills registry goes too: it is implied. Every log row's tip is a row of
-- its own skill's tips (the key above, tip_id NOT NULL), and every tip's skill is in the registry
-- (tips' own key), so no row it would refuse can be written, and a skill with log rows cannot leave
-- the registry while its tips hold it there. It was a fourth check on every row written, 4% of a
-- 50,000-retrieval bulk load on the 1M-row bench log (4.13 to 4.58 s with it, 3.91 to 4.01 s without).
BEGIN;

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
                   ('ctxgraph.tip_run_stats', 'tip_run_stats_skill_tip_id_fkey', 'skill, tip_id', 'ctxgraph.tips', 'skill, id', 'CASCADE'),
                   ('ctxgraph.tip_retrievals', 'tip_retrievals_skill_run_id_fkey', 'skill, run_id', 'ctxgraph.runs', 'skill, id', 'NO ACTION'),
                   ('ctxgraph.tip_retrievals', 'tip_retrievals_skill_attempt_id_fkey', 'skill, attempt_id', 'ctxgraph.attempts', 'skill, id', 'NO ACTION'),
                   ('ctxgraph.tip_retrievals', 'tip_retrievals_skill_tip_id_fkey', 'skill, tip_id', 'ctxgraph.tips', 'skill, id', 'NO ACTION'))
           AS k (parent, name, columns, referenced, referenced_columns, on_delete)
     WHERE pg_catalog.to_regclass(k.parent) IS NOT NULL AND pg_catalog.to_regclass(k.referenced) IS NOT NULL
$$;

COMMENT ON FUNCTION ctxgraph._skill_partition_keys() IS
    'Private: the foreign keys ensure_skill_partitions declares between each skill''s partitions (the parents hold none of them): table, constraint name, columns, referenced table and columns, ON DELETE action.';

-- The parents' keys go; ensure_skill_partitions declares them between every skill's partitions in
-- the same transaction (validating the rows there in one pass each), so no row goes unchecked.
ALTER TABLE ctxgraph.tip_retrievals
    DROP CONSTRAINT tip_retrievals_skill_fkey,
    DROP CONSTRAINT tip_retrievals_skill_run_id_fkey,
    DROP CONSTRAINT tip_retrievals_skill_attempt_id_fkey,
    DROP CONSTRAINT tip_retrievals_skill_tip_id_fkey;

DO $$ BEGIN PERFORM ctxgraph.ensure_skill_partitions(); END $$;

COMMIT;
