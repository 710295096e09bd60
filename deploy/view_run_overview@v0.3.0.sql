-- Deploy ctxgraph:view_run_overview to pg
-- requires: table_scoring_state
-- requires: function_follow_weight

-- The audit overview: per run, how much of the log has outcomes and follow scores, and why the
-- follow columns that are NULL are NULL (from the scoring pass's own record).
BEGIN;

CREATE VIEW ctxgraph.run_overview AS
SELECT r.skill,
       r.run_id,
       count(DISTINCT r.attempt_id) AS attempts,
       count(DISTINCT r.rule_id) AS rules,
       count(*) AS retrievals,
       count(r.outcome_value) AS with_outcome,
       count(r.tip_followed_computed_at) AS scored,
       count(*) - count(r.tip_followed_computed_at) AS unscored,
       count(r.tip_followed_llm) AS judge_verdicts,
       count(r.tip_followed_emb) FILTER (WHERE r.tip_followed_emb <> 'NaN'::double precision) AS cosines,
       count(*) FILTER (WHERE ctxgraph.tip_followed(r.tip_followed_llm, r.tip_followed_emb)) AS followed,
       min(r.retrieved_at) AS first_retrieval,
       max(r.retrieved_at) AS last_retrieval
  FROM ctxgraph.tip_retrievals AS r
 GROUP BY r.skill, r.run_id;

COMMENT ON VIEW ctxgraph.run_overview IS 'Per run: attempts, retrievals, outcome and follow-score coverage.';
COMMENT ON COLUMN ctxgraph.run_overview.skill IS 'The skill.';
COMMENT ON COLUMN ctxgraph.run_overview.run_id IS 'The run.';
COMMENT ON COLUMN ctxgraph.run_overview.attempts IS 'Distinct attempts linked to the run''s retrievals.';
COMMENT ON COLUMN ctxgraph.run_overview.rules IS 'Distinct rules retrieved for.';
COMMENT ON COLUMN ctxgraph.run_overview.retrievals IS 'Retrievals logged.';
COMMENT ON COLUMN ctxgraph.run_overview.with_outcome IS 'Retrievals whose outcome is recorded.';
COMMENT ON COLUMN ctxgraph.run_overview.scored IS 'Retrievals the scoring pass has finished (computed_at set).';
COMMENT ON COLUMN ctxgraph.run_overview.unscored IS 'Retrievals the next scoring pass will take.';
COMMENT ON COLUMN ctxgraph.run_overview.judge_verdicts IS 'Retrievals with a judge verdict.';
COMMENT ON COLUMN ctxgraph.run_overview.cosines IS 'Retrievals with a cosine.';
COMMENT ON COLUMN ctxgraph.run_overview.followed IS 'Retrievals counted as followed (judge, else cosine threshold).';
COMMENT ON COLUMN ctxgraph.run_overview.first_retrieval IS 'First retrieval of the run.';
COMMENT ON COLUMN ctxgraph.run_overview.last_retrieval IS 'Last retrieval of the run.';

CREATE VIEW ctxgraph.scoring_null_reasons AS
SELECT r.skill, r.run_id, leg.leg, leg.reason, count(*) AS retrievals
  FROM ctxgraph.retrieval_scores AS s
  JOIN ctxgraph.tip_retrievals AS r ON r.skill = s.skill AND r.id = s.retrieval_id
 CROSS JOIN LATERAL (VALUES ('judge', s.llm_status), ('embedding', s.emb_status)) AS leg (leg, reason)
 WHERE (leg.leg = 'judge' AND r.tip_followed_llm IS NULL)
    OR (leg.leg = 'embedding' AND r.tip_followed_emb IS NULL)
 GROUP BY r.skill, r.run_id, leg.leg, leg.reason;

COMMENT ON VIEW ctxgraph.scoring_null_reasons IS 'Per run and leg, why the scoring pass left follow columns NULL, and how many.';
COMMENT ON COLUMN ctxgraph.scoring_null_reasons.skill IS 'The skill.';
COMMENT ON COLUMN ctxgraph.scoring_null_reasons.run_id IS 'The run.';
COMMENT ON COLUMN ctxgraph.scoring_null_reasons.leg IS 'judge or embedding.';
COMMENT ON COLUMN ctxgraph.scoring_null_reasons.reason IS 'The leg status (no_script, http_error, judge_not_configured, ...).';
COMMENT ON COLUMN ctxgraph.scoring_null_reasons.retrievals IS 'Retrievals with that reason.';

GRANT SELECT ON ctxgraph.run_overview, ctxgraph.scoring_null_reasons TO ctxgraph_analyst;

DO $$
BEGIN
    PERFORM ctxgraph.expose_skill_view('run_overview');
    PERFORM ctxgraph.expose_skill_view('scoring_null_reasons');
END
$$;

COMMIT;
