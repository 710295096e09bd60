-- Verify ctxgraph:view_misleading_tips on pg

SELECT skill, tip_id, rule_id, body, attempts, outcome_hit_rate, hit_rate, follow_rate, credit_gap, retired
  FROM ctxgraph.misleading_tips WHERE FALSE;
SELECT tip_id, rule_id, body, attempts, outcome_hit_rate, hit_rate, follow_rate, credit_gap, retired
  FROM stig.misleading_tips WHERE FALSE;
