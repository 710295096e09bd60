-- Deploy ctxgraph:view_tip_hit_rates to pg
-- requires: view_tip_hit_rates@v0.4.0
-- requires: table_tip_effects

-- Rework: the ranker's view gains each tip's effect when followed and its bounds
-- (ctxgraph.tip_effects, refitted at the end of every scoring pass), appended after the released
-- columns; hit_rate and outcome_hit_rate keep the ADR's meaning. The per-skill projections are
-- recreated so that they carry the new columns.
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
                             (SELECT ctxgraph.param('utility.bound_z')))
           AS utility_lower_bound,
       s.last_retrieved_at,
       t.retired_at IS NOT NULL AS retired,
       t.retired_at,
       e.effect,
       e.lower_bound AS effect_lower_bound,
       e.upper_bound AS effect_upper_bound
  FROM ctxgraph.tips AS t
  LEFT JOIN ctxgraph.tip_stats AS s ON s.skill = t.skill AND s.tip_id = t.id
  LEFT JOIN ctxgraph.tip_effects AS e ON e.skill = t.skill AND e.tip_id = t.id;

COMMENT ON COLUMN ctxgraph.tip_hit_rates.effect IS 'Effect on the attempt''s graded outcome when the tip is followed, co-followed tips and the rule''s difficulty explained away (ctxgraph.tip_effects); NULL without evidence.';
COMMENT ON COLUMN ctxgraph.tip_hit_rates.effect_lower_bound IS 'Lower bound of the effect (effects.bound_z).';
COMMENT ON COLUMN ctxgraph.tip_hit_rates.effect_upper_bound IS 'Upper bound of the effect: below effects.harmful_below the tip is harmful when followed.';

DO $$
BEGIN
    PERFORM ctxgraph.unexpose_skill_view('tip_hit_rates');
    PERFORM ctxgraph.expose_skill_view('tip_hit_rates');
END
$$;

COMMIT;
