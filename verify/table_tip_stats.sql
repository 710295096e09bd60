-- Verify ctxgraph:table_tip_stats on pg

SELECT skill, tip_id, retrievals, scored, attempts, outcome_sum, weighted_sum, follow_known, followed, harm,
       last_retrieved_at, refreshed_at
  FROM ctxgraph.tip_stats WHERE FALSE;
SELECT 'ctxgraph.refresh_tip_stats(text, bigint[])'::regprocedure;
-- Every skill partition of tip_retrievals carries the three statement triggers.
SELECT 1 / (COUNT(*) = 0)::int
  FROM pg_catalog.pg_inherits AS i
 WHERE i.inhparent = 'ctxgraph.tip_retrievals'::regclass
   AND (SELECT count(*) FROM pg_catalog.pg_trigger AS t
         WHERE t.tgrelid = i.inhrelid AND t.tgname LIKE 'tip_stats_after_%') <> 3;
