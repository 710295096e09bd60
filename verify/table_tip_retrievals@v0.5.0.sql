-- Verify ctxgraph:table_tip_retrievals on pg

SELECT skill, id, run_id, attempt_id, tip_id, rule_id, rank, similarity_score, outcome_value,
       outcome_confidence, retrieved_at
  FROM ctxgraph.tip_retrievals WHERE FALSE;

-- Partitioned by skill; every row points at its run, attempt and tip of the same skill.
SELECT 1 / COUNT(*)
  FROM pg_catalog.pg_partitioned_table AS pt
  JOIN pg_catalog.pg_attribute AS a ON a.attrelid = pt.partrelid AND a.attnum = pt.partattrs[0]
 WHERE pt.partrelid = 'ctxgraph.tip_retrievals'::regclass AND pt.partstrat = 'l' AND a.attname = 'skill';
SELECT 1 / (COUNT(*) = 3)::int FROM pg_catalog.pg_constraint
 WHERE conrelid = 'ctxgraph.tip_retrievals'::regclass AND contype = 'f'
   AND pg_catalog.pg_get_constraintdef(oid) IN (
        'FOREIGN KEY (skill, run_id) REFERENCES ctxgraph.runs(skill, id)',
        'FOREIGN KEY (skill, attempt_id) REFERENCES ctxgraph.attempts(skill, id)',
        'FOREIGN KEY (skill, tip_id) REFERENCES ctxgraph.tips(skill, id)');
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
