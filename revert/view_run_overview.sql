-- Revert ctxgraph:view_run_overview from pg

-- Back to the definition released at @v0.3.0, replaced in place.
BEGIN;

CREATE OR REPLACE VIEW ctxgraph.run_overview AS
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

COMMIT;
