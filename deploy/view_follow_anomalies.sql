-- Deploy ctxgraph:view_follow_anomalies to pg
-- requires: view_follow_anomalies@v0.3.0
-- requires: function_follow_weight

-- Rework: NaN-as-NULL through ctxgraph.known_cosine and coefficients through ctxgraph.param()
-- (read once per query; a missing row raises). Same columns, replaced in place.
BEGIN;

CREATE OR REPLACE VIEW ctxgraph.follow_anomalies AS
SELECT r.skill,
       r.id AS retrieval_id,
       r.run_id,
       r.rule_id,
       r.attempt_id,
       r.tip_id,
       t.body,
       r.tip_followed_llm,
       r.tip_followed_emb,
       CASE WHEN r.tip_followed_llm THEN 'judge followed, cosine near zero'
            ELSE 'judge ignored, cosine high' END AS kind
  FROM ctxgraph.tip_retrievals AS r
  JOIN ctxgraph.tips AS t ON t.skill = r.skill AND t.id = r.tip_id
 WHERE ((r.tip_followed_llm
         AND ctxgraph.known_cosine(r.tip_followed_emb) < (SELECT ctxgraph.param('anomaly.low_cosine')))
     OR (NOT r.tip_followed_llm
         AND ctxgraph.known_cosine(r.tip_followed_emb) >= (SELECT ctxgraph.param('anomaly.high_cosine'))))
 ORDER BY r.skill, r.run_id, r.rule_id, r.id;

COMMIT;
