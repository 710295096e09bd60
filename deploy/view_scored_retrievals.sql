-- Deploy ctxgraph:view_scored_retrievals to pg
-- requires: view_scored_retrievals@v0.5.0
-- requires: table_parameters

-- Rework: follow_weight read each row's coefficient through ctxgraph.param(), a PL/pgSQL call
-- (an SPI query) per row: 1.2 us a row, 1.3 s of a 1.4 s read of a 1M-row skill's weights, and
-- most of a per-tip read. It now comes from a join of the branch's row of ctxgraph.parameters;
-- ctxgraph.param() is called only for a branch without one, and raises as before. Same columns,
-- same values: CREATE OR REPLACE keeps the view, its projections, comments and grants.
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
       -- The branch's coefficient from the join below; a missing one goes to ctxgraph.param,
       -- which raises: never a silent 0 or NULL weight.
       coalesce(w.value, ctxgraph.param('follow.weight.' || f.decision)) AS follow_weight,
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
  -- At most one row (name is the key), so the join neither adds nor drops a retrieval, and the
  -- planner leaves it out of reads that do not ask for follow_weight.
  LEFT JOIN ctxgraph.parameters AS w ON w.name = 'follow.weight.' || f.decision
 WHERE r.outcome_value IS NOT NULL;

COMMIT;
