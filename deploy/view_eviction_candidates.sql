-- Deploy ctxgraph:view_eviction_candidates to pg
-- requires: function_tip_evidence

-- What ctxgraph.evict_tips would retire right now: the preview to read before acting.
BEGIN;

CREATE VIEW ctxgraph.eviction_candidates AS
SELECT s.name AS skill,
       e.tip_id,
       e.rule_id,
       t.body,
       e.reason,
       e.attempts,
       e.runs,
       e.followed_attempts,
       e.followed_outcome,
       e.outcome_upper_bound,
       e.rule_baseline,
       e.shortfall_lower_bound,
       e.harm_attempts,
       e.harm_share,
       e.baseline_harm_share
  FROM ctxgraph.skills AS s
 CROSS JOIN LATERAL ctxgraph.tip_evidence(s.name, now()) AS e
  JOIN ctxgraph.tips AS t ON t.skill = s.name AND t.id = e.tip_id
 WHERE e.reason IS NOT NULL
   AND NOT e.retired;

COMMENT ON VIEW ctxgraph.eviction_candidates IS
    'Active tips whose evidence (ctxgraph.tip_evidence at now()) justifies retiring them: what ctxgraph.evict_tips would retire.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.skill IS 'The skill.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.tip_id IS 'The tip.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.rule_id IS 'The rule the tip was learned on.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.body IS 'The tip text.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.reason IS 'Why it would be retired.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.attempts IS 'Distinct scored attempts (the unit of evidence).';
COMMENT ON COLUMN ctxgraph.eviction_candidates.runs IS 'Distinct runs of those attempts.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.followed_attempts IS 'Follow-weighted attempts: the sum of follow weights.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.followed_outcome IS 'Follow-weighted mean outcome of the tip''s attempts.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.outcome_upper_bound IS 'Wilson upper bound of followed_outcome (z = eviction.bound_z).';
COMMENT ON COLUMN ctxgraph.eviction_candidates.rule_baseline IS 'Mean outcome of the same rules'' attempts that did not follow the tip.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.shortfall_lower_bound IS 'rule_baseline - outcome_upper_bound: how much worse following the tip does, at least.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.harm_attempts IS 'Follow-weighted attempts that broke the system.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.harm_share IS 'harm_attempts / followed_attempts.';
COMMENT ON COLUMN ctxgraph.eviction_candidates.baseline_harm_share IS 'Share of the rules'' other attempts that broke the system.';

GRANT SELECT ON ctxgraph.eviction_candidates TO ctxgraph_ranker, ctxgraph_analyst;

DO $$ BEGIN PERFORM ctxgraph.expose_skill_view('eviction_candidates'); END $$;

COMMIT;
