-- Revert ctxgraph:view_follow_anomalies from pg

-- Back to the definition released at @v0.3.0 (same columns, replaced in place).
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
 WHERE r.tip_followed_emb <> 'NaN'::double precision
   AND ((r.tip_followed_llm
         AND r.tip_followed_emb < (SELECT p.value FROM ctxgraph.parameters AS p WHERE p.name = 'anomaly.low_cosine'))
     OR (NOT r.tip_followed_llm
         AND r.tip_followed_emb >= (SELECT p.value FROM ctxgraph.parameters AS p WHERE p.name = 'anomaly.high_cosine')))
 ORDER BY r.skill, r.run_id, r.rule_id, r.id;

COMMIT;
