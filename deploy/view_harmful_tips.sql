-- Deploy ctxgraph:view_harmful_tips to pg
-- requires: view_tip_hit_rates

-- Harm is kept as its own count, not folded into an average: a tip that was followed while
-- the system broke is worth a look even when its hit rate is fine.
BEGIN;

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
