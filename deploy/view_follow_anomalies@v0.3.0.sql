-- Deploy ctxgraph:view_follow_anomalies to pg
-- requires: def27_tip_followed

-- Rows where the two legs disagree starkly, worth a human look: the judge says followed while
-- the script has almost nothing in common with the tip, or the judge says ignored while the
-- script is nearly the tip's own words.
BEGIN;

INSERT INTO ctxgraph.parameters (name, value, description) VALUES
    ('anomaly.low_cosine',  0.15, 'Anomaly: judge says followed but the cosine is below this.'),
    ('anomaly.high_cosine', 0.85, 'Anomaly: judge says not followed but the cosine is at or above this.');

CREATE VIEW ctxgraph.follow_anomalies AS
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

COMMENT ON VIEW ctxgraph.follow_anomalies IS
    'Retrievals where judge and cosine disagree starkly (thresholds anomaly.*): candidates for manual review of the judge.';
COMMENT ON COLUMN ctxgraph.follow_anomalies.skill IS 'The skill.';
COMMENT ON COLUMN ctxgraph.follow_anomalies.retrieval_id IS 'The retrieval.';
COMMENT ON COLUMN ctxgraph.follow_anomalies.run_id IS 'Its run.';
COMMENT ON COLUMN ctxgraph.follow_anomalies.rule_id IS 'Its rule.';
COMMENT ON COLUMN ctxgraph.follow_anomalies.attempt_id IS 'Its attempt.';
COMMENT ON COLUMN ctxgraph.follow_anomalies.tip_id IS 'The tip.';
COMMENT ON COLUMN ctxgraph.follow_anomalies.body IS 'The tip text.';
COMMENT ON COLUMN ctxgraph.follow_anomalies.tip_followed_llm IS 'The judge''s verdict.';
COMMENT ON COLUMN ctxgraph.follow_anomalies.tip_followed_emb IS 'The cosine.';
COMMENT ON COLUMN ctxgraph.follow_anomalies.kind IS 'Which disagreement.';

GRANT SELECT ON ctxgraph.follow_anomalies TO ctxgraph_analyst;

DO $$ BEGIN PERFORM ctxgraph.expose_skill_view('follow_anomalies'); END $$;

COMMIT;
