-- Deploy ctxgraph:view_misleading_tips to pg
-- requires: view_misleading_tips@v0.3.0
-- requires: view_tip_hit_rates

-- Rework: coefficients read through ctxgraph.param(), once per query (an uncorrelated scalar
-- subquery), so a missing parameter row raises instead of silently emptying or nulling the view.
-- Same columns, replaced in place.
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
 WHERE h.attempts >= (SELECT ctxgraph.param('misleading.min_attempts'))
   AND h.outcome_hit_rate >= (SELECT ctxgraph.param('misleading.min_outcome_hit_rate'))
   AND h.follow_rate <= (SELECT ctxgraph.param('misleading.max_follow_rate'))
 ORDER BY credit_gap DESC, h.skill, h.tip_id;

COMMIT;
