-- Verify ctxgraph:view_eviction_candidates on pg

SELECT skill, tip_id, rule_id, body, reason, attempts, runs, followed_attempts, followed_outcome,
       outcome_upper_bound, rule_baseline, shortfall_lower_bound, harm_attempts, harm_share, baseline_harm_share
  FROM ctxgraph.eviction_candidates WHERE FALSE;
SELECT tip_id, reason FROM stig.eviction_candidates WHERE FALSE;
