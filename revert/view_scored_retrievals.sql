-- Revert ctxgraph:view_scored_retrievals from pg

-- Back to the definition released at @v0.5.0: follow_weight through ctxgraph.param() per row.
-- The columns are the same, so CREATE OR REPLACE keeps the projections, comments and grants.
BEGIN;

CREATE OR REPLACE VIEW ctxgraph.scored_retrievals AS
SELECT r.skill,
       r.id AS retrieval_id,
       r.tip_id,
       -- One attempt's rows are one observation; a legacy row with no attempt stands alone.
       coalesce(r.attempt_id, -r.id) AS attempt_key,
       r.attempt_id,
       r.run_id,
       r.rule_id,
       r.retrieved_at,
       r.outcome_value * coalesce(r.outcome_confidence, 1.0) AS credit,
       ctxgraph.follow_verdict(f.decision) AS followed,
       -- ctxgraph.param raises on a missing coefficient: never a silent 0 or NULL weight.
       ctxgraph.param('follow.weight.' || f.decision) AS follow_weight,
       CASE split_part(f.decision, '_', 1)
           WHEN 'judge' THEN 'judge' WHEN 'signal' THEN 'signal' WHEN 'emb' THEN 'embedding' ELSE 'none'
       END AS follow_source,
       f.decision AS follow_decision,
       ctxgraph.known_cosine(r.tip_followed_emb) AS cosine,
       -- The attempt's failure mode broke the system; a row with no attempt: a negative outcome.
       -- A correlated primary-key lookup rather than a join, so that a per-tip read stays an index
       -- scan whatever the (often missing) statistics of the partitioned parents say.
       coalesce((SELECT fm.is_harm
                   FROM ctxgraph.attempts AS a
                   JOIN ctxgraph.failure_modes AS fm ON fm.name = a.failure_mode
                  WHERE a.skill = r.skill AND a.id = r.attempt_id),
                r.outcome_value < 0) AS harmful,
       r.follow_probability
  FROM ctxgraph.tip_retrievals AS r
  -- The thresholds as uncorrelated scalar subqueries: read (and checked) once per query.
  CROSS JOIN LATERAL (SELECT ctxgraph.follow_decision(r.tip_followed_llm, r.tip_followed_emb, r.follow_probability,
                                                      (SELECT ctxgraph.param('follow.emb_threshold')),
                                                      (SELECT ctxgraph.param('follow.probability_threshold'))) AS decision) AS f
 WHERE r.outcome_value IS NOT NULL;

COMMIT;
