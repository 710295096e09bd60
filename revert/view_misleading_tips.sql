-- Revert ctxgraph:view_misleading_tips from pg

-- Back to the definition released at @v0.3.0 (same columns, replaced in place).
BEGIN;

CREATE OR REPLACE VIEW ctxgraph.misleading_tips AS
SELECT h.skill,
       h.tip_id,
       h.rule_id,
       t.body,
       h.attempts,
       h.outcome_hit_rate,
       h.hit_rate,
       h.follow_rate,
       h.outcome_hit_rate - coalesce(h.hit_rate, 0) AS credit_gap,
       h.retired
  FROM ctxgraph.tip_hit_rates AS h
  JOIN ctxgraph.tips AS t ON t.skill = h.skill AND t.id = h.tip_id
 WHERE h.attempts >= (SELECT p.value FROM ctxgraph.parameters AS p WHERE p.name = 'misleading.min_attempts')
   AND h.outcome_hit_rate >= (SELECT p.value FROM ctxgraph.parameters AS p WHERE p.name = 'misleading.min_outcome_hit_rate')
   AND h.follow_rate <= (SELECT p.value FROM ctxgraph.parameters AS p WHERE p.name = 'misleading.max_follow_rate')
 ORDER BY credit_gap DESC, h.skill, h.tip_id;

COMMIT;
