-- Deploy ctxgraph:view_harmful_when_followed to pg
-- requires: table_tip_effects
-- requires: view_tip_hit_rates

-- Tips that hurt the attempts that follow them, other tips followed with them and the rule's
-- difficulty explained away: the effect's upper bound lies below effects.harmful_below. It sits
-- beside the ADR's misleading_tips, which measures something else: tips credited by outcome-only
-- credit although the Worker mostly ignored them (they may be harmless or harmful when followed;
-- this view says which have been shown harmful).
BEGIN;

CREATE VIEW ctxgraph.harmful_when_followed AS
SELECT h.skill,
       h.tip_id,
       h.rule_id,
       t.body,
       e.attempts,
       e.followed_attempts,
       e.effect,
       e.lower_bound AS effect_lower_bound,
       e.upper_bound AS effect_upper_bound,
       e.co_followed_tips,
       h.outcome_hit_rate,
       h.hit_rate,
       h.follow_rate,
       h.retired
  FROM ctxgraph.tip_effects AS e
  JOIN ctxgraph.tip_hit_rates AS h ON h.skill = e.skill AND h.tip_id = e.tip_id
  JOIN ctxgraph.tips AS t ON t.skill = e.skill AND t.id = e.tip_id
 WHERE e.upper_bound < (SELECT ctxgraph.param('effects.harmful_below'))
 ORDER BY e.upper_bound, e.skill, e.tip_id;

COMMENT ON VIEW ctxgraph.harmful_when_followed IS
    'Tips whose effect when followed is shown harmful (effect upper bound below effects.harmful_below), co-followed tips and rule difficulty explained away; most clearly harmful first.';
COMMENT ON COLUMN ctxgraph.harmful_when_followed.skill IS 'The skill.';
COMMENT ON COLUMN ctxgraph.harmful_when_followed.tip_id IS 'The tip.';
COMMENT ON COLUMN ctxgraph.harmful_when_followed.rule_id IS 'The rule the tip was learned on.';
COMMENT ON COLUMN ctxgraph.harmful_when_followed.body IS 'The tip text.';
COMMENT ON COLUMN ctxgraph.harmful_when_followed.attempts IS 'Attempts with a known outcome that retrieved the tip.';
COMMENT ON COLUMN ctxgraph.harmful_when_followed.followed_attempts IS 'Sum of its follow weights over those attempts.';
COMMENT ON COLUMN ctxgraph.harmful_when_followed.effect IS 'Effect on the graded outcome when followed.';
COMMENT ON COLUMN ctxgraph.harmful_when_followed.effect_lower_bound IS 'Lower bound of the effect.';
COMMENT ON COLUMN ctxgraph.harmful_when_followed.effect_upper_bound IS 'Upper bound of the effect (below effects.harmful_below).';
COMMENT ON COLUMN ctxgraph.harmful_when_followed.co_followed_tips IS 'Tips always followed together with it (itself included), which share the effect.';
COMMENT ON COLUMN ctxgraph.harmful_when_followed.outcome_hit_rate IS 'Outcome-only hit rate, for comparison.';
COMMENT ON COLUMN ctxgraph.harmful_when_followed.hit_rate IS 'Follow-weighted hit rate, for comparison.';
COMMENT ON COLUMN ctxgraph.harmful_when_followed.follow_rate IS 'Share of scored retrievals followed.';
COMMENT ON COLUMN ctxgraph.harmful_when_followed.retired IS 'True when eviction retired the tip.';

DO $$
BEGIN
    PERFORM ctxgraph._grant('SELECT ON ctxgraph.harmful_when_followed', '{ranker,analyst}');
    PERFORM ctxgraph.expose_skill_view('harmful_when_followed');
END
$$;

COMMIT;
