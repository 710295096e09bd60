-- Revert ctxgraph:view_tip_hit_rates from pg

-- Back to the definition released at @v0.3.0 (same columns, replaced in place).
BEGIN;

CREATE OR REPLACE VIEW ctxgraph.tip_hit_rates AS
SELECT t.skill,
       t.id AS tip_id,
       t.rule_id,
       coalesce(s.retrievals, 0) AS retrievals,
       coalesce(s.scored, 0) AS scored,
       coalesce(s.attempts, 0) AS attempts,
       s.outcome_sum / nullif(s.scored, 0) AS outcome_hit_rate,
       s.weighted_sum / nullif(s.scored, 0) AS hit_rate,
       s.followed::double precision / nullif(s.follow_known, 0) AS follow_rate,
       coalesce(s.harm, 0) AS harm,
       ctxgraph.wilson_lower(s.weighted_sum / nullif(s.scored, 0), s.attempts,
                             (SELECT p.value FROM ctxgraph.parameters AS p WHERE p.name = 'utility.bound_z'))
           AS utility_lower_bound,
       s.last_retrieved_at,
       t.retired_at IS NOT NULL AS retired,
       t.retired_at
  FROM ctxgraph.tips AS t
  LEFT JOIN ctxgraph.tip_stats AS s ON s.skill = t.skill AND s.tip_id = t.id;

COMMIT;
