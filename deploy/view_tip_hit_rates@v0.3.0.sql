-- Deploy ctxgraph:view_tip_hit_rates to pg
-- requires: table_tip_stats
-- requires: function_wilson_bounds

-- The ranker's view: one row per tip, read for a set of candidate tip ids. It joins tips to the
-- maintained tip_stats by primary key, so a read of 50 tips touches 50 + 50 index entries and
-- never aggregates the retrieval log (docs/ranker-plan.md shows the plan).
BEGIN;

INSERT INTO ctxgraph.parameters (name, value, description) VALUES
    ('utility.bound_z', 1.645, 'Normal quantile of utility_lower_bound (one-sided 95%): tips with few attempts rank below proven ones.');

CREATE VIEW ctxgraph.tip_hit_rates AS
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

COMMENT ON VIEW ctxgraph.tip_hit_rates IS
    'One row per tip: outcome-only and follow-weighted hit rates, follow rate, harm and a Wilson lower bound, from maintained aggregates. Rates count only retrievals whose outcome is known.';
COMMENT ON COLUMN ctxgraph.tip_hit_rates.skill IS 'The skill.';
COMMENT ON COLUMN ctxgraph.tip_hit_rates.tip_id IS 'The tip.';
COMMENT ON COLUMN ctxgraph.tip_hit_rates.rule_id IS 'The rule the tip was learned on; NULL for general tips.';
COMMENT ON COLUMN ctxgraph.tip_hit_rates.retrievals IS 'All retrievals of the tip.';
COMMENT ON COLUMN ctxgraph.tip_hit_rates.scored IS 'Retrievals whose outcome is known; the rates below are over these.';
COMMENT ON COLUMN ctxgraph.tip_hit_rates.attempts IS 'Distinct attempts among the scored retrievals: the unit of evidence.';
COMMENT ON COLUMN ctxgraph.tip_hit_rates.outcome_hit_rate IS 'The pre-DEF-27 rate: avg(outcome_value * outcome_confidence).';
COMMENT ON COLUMN ctxgraph.tip_hit_rates.hit_rate IS 'Follow-weighted rate: avg(outcome_value * outcome_confidence * follow_weight).';
COMMENT ON COLUMN ctxgraph.tip_hit_rates.follow_rate IS 'Share of scored retrievals with a follow verdict whose verdict is followed.';
COMMENT ON COLUMN ctxgraph.tip_hit_rates.harm IS 'Scored retrievals followed during an attempt that broke the system.';
COMMENT ON COLUMN ctxgraph.tip_hit_rates.utility_lower_bound IS 'Wilson lower bound of hit_rate (clipped to [0, 1]) over attempts, z = utility.bound_z.';
COMMENT ON COLUMN ctxgraph.tip_hit_rates.last_retrieved_at IS 'Latest retrieval of the tip.';
COMMENT ON COLUMN ctxgraph.tip_hit_rates.retired IS 'True when eviction retired the tip; the ranker should skip it.';
COMMENT ON COLUMN ctxgraph.tip_hit_rates.retired_at IS 'When the tip was retired.';

GRANT SELECT ON ctxgraph.tip_hit_rates TO ctxgraph_ranker, ctxgraph_analyst;

DO $$ BEGIN PERFORM ctxgraph.expose_skill_view('tip_hit_rates'); END $$;

COMMIT;
