-- Deploy ctxgraph:view_misleading_tips to pg
-- requires: view_tip_hit_rates

-- ADR-0019 audit section 4, the misleading-tip detector: tips that outcome-only credit calls
-- helpful (high hit rate) although the Worker rarely followed them: lucky neighbours, and the
-- plausible-but-wrong advice that a more obedient Worker will follow next time.
BEGIN;

INSERT INTO ctxgraph.parameters (name, value, description) VALUES
    ('misleading.min_attempts',         3,   'Misleading-tip detector: least distinct scored attempts before a tip is judged.'),
    ('misleading.min_outcome_hit_rate', 0.6, 'Misleading-tip detector: outcome-only hit rate at or above which a tip looks helpful.'),
    ('misleading.max_follow_rate',      0.34, 'Misleading-tip detector: follow rate at or below which the tip was mostly ignored.');

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
 WHERE h.attempts >= (SELECT p.value FROM ctxgraph.parameters AS p WHERE p.name = 'misleading.min_attempts')
   AND h.outcome_hit_rate >= (SELECT p.value FROM ctxgraph.parameters AS p WHERE p.name = 'misleading.min_outcome_hit_rate')
   AND h.follow_rate <= (SELECT p.value FROM ctxgraph.parameters AS p WHERE p.name = 'misleading.max_follow_rate')
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

COMMIT;
