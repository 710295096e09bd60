-- Deploy ctxgraph:view_harmful_when_followed to pg
-- requires: view_harmful_when_followed@v0.5.0
-- requires: table_tip_effects

-- Rework: the list of tips harmful when followed is the blame model's (tip_effects
-- misleading_probability above blame.misleading_above), the same rule eviction applies before
-- its support minimums, instead of the effect's upper bound below effects.harmful_below: with a
-- few attempts per tip that bound stays above zero for nearly every tip (on the simulator's
-- default world it listed 2 of 48 misleading tips). The probability is appended as the last
-- column, and the most likely misleading come first. effects.harmful_below is read no more; its
-- row stays, as an upgrade never deletes a row an operator may have set.
BEGIN;

CREATE OR REPLACE VIEW ctxgraph.harmful_when_followed AS
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
       h.retired,
       e.misleading_probability
  FROM ctxgraph.tip_effects AS e
  JOIN ctxgraph.tip_hit_rates AS h ON h.skill = e.skill AND h.tip_id = e.tip_id
  JOIN ctxgraph.tips AS t ON t.skill = e.skill AND t.id = e.tip_id
 WHERE e.misleading_probability > (SELECT ctxgraph.param('blame.misleading_above'))
 ORDER BY e.misleading_probability DESC, e.skill, e.tip_id;

COMMENT ON VIEW ctxgraph.harmful_when_followed IS
    'Tips whose following fails the attempt: misleading_probability above blame.misleading_above, co-followed tips and the rule''s pass rate explained away; most likely first.';
COMMENT ON COLUMN ctxgraph.harmful_when_followed.effect_upper_bound IS 'Upper bound of the effect (effects.bound_z).';
COMMENT ON COLUMN ctxgraph.harmful_when_followed.misleading_probability IS 'Posterior probability that following the tip fails the attempt (above blame.misleading_above).';
COMMENT ON COLUMN ctxgraph.tip_hit_rates.effect_upper_bound IS 'Upper bound of the effect (effects.bound_z).';
COMMENT ON COLUMN ctxgraph.tip_effects.upper_bound IS 'effect + effects.bound_z * std_error.';

DO $$
BEGIN
    PERFORM ctxgraph.unexpose_skill_view('harmful_when_followed');
    PERFORM ctxgraph.expose_skill_view('harmful_when_followed');
END
$$;

COMMIT;
