-- Verify ctxgraph:table_tip_retrievals on pg

SELECT skill, id, run_id, attempt_id, tip_id, rule_id, rank, similarity_score, outcome_value,
       outcome_confidence, retrieved_at
  FROM ctxgraph.tip_retrievals WHERE FALSE;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_indexes
 WHERE schemaname = 'ctxgraph' AND indexname = 'tip_retrievals_tip_idx';
