-- Revert ctxgraph:view_tip_hit_rates from pg

-- Back to the columns released at @v0.4.0. A view cannot drop columns in place, so tip_hit_rates
-- and the two views that select from it (misleading_tips, harmful_tips) are dropped with their
-- per-skill projections and recreated exactly as released.
BEGIN;

DO $$
BEGIN
    PERFORM ctxgraph.unexpose_skill_view('harmful_tips');
    PERFORM ctxgraph.unexpose_skill_view('misleading_tips');
    PERFORM ctxgraph.unexpose_skill_view('tip_hit_rates');
END
$$;
DROP VIEW ctxgraph.harmful_tips, ctxgraph.misleading_tips, ctxgraph.tip_hit_rates;

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
                             (SELECT ctxgraph.param('utility.bound_z')))
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

CREATE VIEW ctxgraph.misleading_tips AS
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

COMMENT ON VIEW ctxgraph.misleading_tips IS
    'ADR-0019 audit section 4: tips with enough attempts whose outcome-only hit rate is high and follow rate low, by credit gap (thresholds misleading.*).';
COMMENT ON COLUMN ctxgraph.misleading_tips.skill IS 'The skill.';
COMMENT ON COLUMN ctxgraph.misleading_tips.tip_id IS 'The tip.';
COMMENT ON COLUMN ctxgraph.misleading_tips.rule_id IS 'The rule the tip was learned on.';
COMMENT ON COLUMN ctxgraph.misleading_tips.body IS 'The tip text.';
COMMENT ON COLUMN ctxgraph.misleading_tips.attempts IS 'Distinct scored attempts.';
COMMENT ON COLUMN ctxgraph.misleading_tips.outcome_hit_rate IS 'Outcome-only hit rate (what the old ranker believed).';
COMMENT ON COLUMN ctxgraph.misleading_tips.hit_rate IS 'Follow-weighted hit rate.';
COMMENT ON COLUMN ctxgraph.misleading_tips.follow_rate IS 'Share of judged retrievals that followed the tip.';
COMMENT ON COLUMN ctxgraph.misleading_tips.credit_gap IS 'outcome_hit_rate - hit_rate: credit the tip got without earning it.';
COMMENT ON COLUMN ctxgraph.misleading_tips.retired IS 'True when already retired.';

GRANT SELECT ON ctxgraph.misleading_tips TO ctxgraph_ranker, ctxgraph_analyst;

DO $$ BEGIN PERFORM ctxgraph.expose_skill_view('misleading_tips'); END $$;

CREATE VIEW ctxgraph.harmful_tips AS
SELECT h.skill,
       h.tip_id,
       h.rule_id,
       t.body,
       h.harm,
       h.attempts,
       h.harm::double precision / nullif(h.scored, 0) AS harm_rate,
       h.outcome_hit_rate,
       h.hit_rate,
       h.follow_rate,
       h.retired
  FROM ctxgraph.tip_hit_rates AS h
  JOIN ctxgraph.tips AS t ON t.skill = h.skill AND t.id = h.tip_id
 WHERE h.harm > 0
 ORDER BY h.harm DESC, harm_rate DESC, h.skill, h.tip_id;

COMMENT ON VIEW ctxgraph.harmful_tips IS 'Tips followed during attempts that broke the system (failure modes with is_harm), most harm first.';
COMMENT ON COLUMN ctxgraph.harmful_tips.skill IS 'The skill.';
COMMENT ON COLUMN ctxgraph.harmful_tips.tip_id IS 'The tip.';
COMMENT ON COLUMN ctxgraph.harmful_tips.rule_id IS 'The rule the tip was learned on.';
COMMENT ON COLUMN ctxgraph.harmful_tips.body IS 'The tip text.';
COMMENT ON COLUMN ctxgraph.harmful_tips.harm IS 'Scored retrievals followed during a health failure.';
COMMENT ON COLUMN ctxgraph.harmful_tips.attempts IS 'Distinct scored attempts.';
COMMENT ON COLUMN ctxgraph.harmful_tips.harm_rate IS 'harm / scored retrievals.';
COMMENT ON COLUMN ctxgraph.harmful_tips.outcome_hit_rate IS 'Outcome-only hit rate.';
COMMENT ON COLUMN ctxgraph.harmful_tips.hit_rate IS 'Follow-weighted hit rate.';
COMMENT ON COLUMN ctxgraph.harmful_tips.follow_rate IS 'Share of judged retrievals that followed the tip.';
COMMENT ON COLUMN ctxgraph.harmful_tips.retired IS 'True when already retired.';

GRANT SELECT ON ctxgraph.harmful_tips TO ctxgraph_ranker, ctxgraph_analyst;

DO $$ BEGIN PERFORM ctxgraph.expose_skill_view('harmful_tips'); END $$;

COMMIT;
