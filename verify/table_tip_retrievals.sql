-- Verify ctxgraph:table_tip_retrievals on pg

SELECT skill, id, run_id, attempt_id, tip_id, rule_id, rank, similarity_score, outcome_value,
       outcome_confidence, retrieved_at
  FROM ctxgraph.tip_retrievals WHERE FALSE;

-- Partitioned by skill; every row points at its run, attempt and tip of the same skill, through
-- keys declared between each skill's partitions; the parent holds none (its key into the skills
-- registry is implied by the tips' keys).
SELECT 1 / COUNT(*)
  FROM pg_catalog.pg_partitioned_table AS pt
  JOIN pg_catalog.pg_attribute AS a ON a.attrelid = pt.partrelid AND a.attnum = pt.partattrs[0]
 WHERE pt.partrelid = 'ctxgraph.tip_retrievals'::regclass AND pt.partstrat = 'l' AND a.attname = 'skill';
SELECT 1 / (COUNT(*) = 0)::int FROM pg_catalog.pg_constraint
 WHERE conrelid = 'ctxgraph.tip_retrievals'::regclass AND contype = 'f';
SELECT 1 / (COUNT(*) = 3)::int FROM ctxgraph._skill_partition_keys() AS k
 WHERE k.parent = 'ctxgraph.tip_retrievals'::regclass
   AND k.name IN ('tip_retrievals_skill_run_id_fkey', 'tip_retrievals_skill_attempt_id_fkey',
                  'tip_retrievals_skill_tip_id_fkey');
SELECT 1 / (COUNT(*) = 0)::int
  FROM ctxgraph.skills AS s
 CROSS JOIN (VALUES ('tip_retrievals_skill_run_id_fkey', 'runs'), ('tip_retrievals_skill_attempt_id_fkey', 'attempts'),
                    ('tip_retrievals_skill_tip_id_fkey', 'tips')) AS k (name, referenced)
 WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint AS c
                    WHERE c.contype = 'f' AND c.conname = k.name AND c.conparentid = 0
                      AND c.conrelid = pg_catalog.to_regclass(format('%I.tip_retrievals', s.name))
                      AND c.confrelid = pg_catalog.to_regclass(format('%I.%I', s.name, k.referenced)));
-- The value ranges the aggregates rely on.
SELECT 1 / (COUNT(*) = 3)::int FROM pg_catalog.pg_constraint
 WHERE conrelid = 'ctxgraph.tip_retrievals'::regclass AND contype = 'c'
   AND conname IN ('tip_retrievals_rank_check', 'tip_retrievals_outcome_value_check',
                   'tip_retrievals_outcome_confidence_check');
-- Per-tip reads, per-attempt writes and the scorer's run/rule/time mapping are indexed.
SELECT 1 / (COUNT(*) = 3)::int FROM pg_catalog.pg_index
 WHERE indrelid = 'ctxgraph.tip_retrievals'::regclass
   AND indexrelid IN ('ctxgraph.tip_retrievals_tip_idx'::regclass, 'ctxgraph.tip_retrievals_attempt_idx'::regclass,
                      'ctxgraph.tip_retrievals_run_rule_idx'::regclass);

-- The writer logs rows and may update no logged column; scorer and analyst read; the ranker reads
-- the views, not the raw log. The writer's INSERT is checked on the columns it logs:
-- column_follow_probability narrows it from the whole table to them, and privileges_write_path
-- leaves the link and the outcome to the write-path functions.
SELECT 1 / (pg_catalog.has_table_privilege('ctxgraph_writer', 'ctxgraph.tip_retrievals', 'SELECT')
            AND pg_catalog.has_column_privilege('ctxgraph_writer', 'ctxgraph.tip_retrievals', 'tip_id', 'INSERT')
            AND pg_catalog.has_column_privilege('ctxgraph_writer', 'ctxgraph.tip_retrievals', 'rank', 'INSERT')
            AND pg_catalog.has_sequence_privilege('ctxgraph_writer', 'ctxgraph.tip_retrievals_id_seq', 'USAGE')
            AND NOT pg_catalog.has_column_privilege('ctxgraph_writer', 'ctxgraph.tip_retrievals', 'tip_id', 'UPDATE')
            AND NOT pg_catalog.has_table_privilege('ctxgraph_writer', 'ctxgraph.tip_retrievals', 'DELETE'))::int;
SELECT 1 / (COUNT(*) = 2)::int
  FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_scorer', 'ctxgraph_analyst')
   AND pg_catalog.has_table_privilege(r.oid, 'ctxgraph.tip_retrievals', 'SELECT')
   AND NOT pg_catalog.has_table_privilege(r.oid, 'ctxgraph.tip_retrievals', 'INSERT, DELETE')
   AND NOT pg_catalog.has_column_privilege(r.oid, 'ctxgraph.tip_retrievals', 'outcome_value', 'UPDATE');
SELECT 1 / (NOT pg_catalog.has_table_privilege('ctxgraph_ranker', 'ctxgraph.tip_retrievals', 'SELECT'))::int;
