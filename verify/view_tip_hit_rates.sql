-- Verify ctxgraph:view_tip_hit_rates on pg

SELECT skill, tip_id, rule_id, retrievals, scored, attempts, outcome_hit_rate, hit_rate, follow_rate, harm,
       utility_lower_bound, last_retrieved_at, retired, retired_at
  FROM ctxgraph.tip_hit_rates WHERE FALSE;
SELECT tip_id, rule_id, retrievals, scored, attempts, outcome_hit_rate, hit_rate, follow_rate, harm,
       utility_lower_bound, last_retrieved_at, retired, retired_at
  FROM stig.tip_hit_rates WHERE FALSE;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_roles r
 WHERE r.rolname = 'ctxgraph_ranker' AND pg_catalog.has_table_privilege(r.oid, 'stig.tip_hit_rates', 'select');
