-- Verify ctxgraph:view_harmful_tips on pg

SELECT skill, tip_id, rule_id, body, harm, attempts, harm_rate, outcome_hit_rate, hit_rate, follow_rate, retired
  FROM ctxgraph.harmful_tips WHERE FALSE;
SELECT tip_id, rule_id, body, harm, attempts, harm_rate, outcome_hit_rate, hit_rate, follow_rate, retired
  FROM stig.harmful_tips WHERE FALSE;
