-- Verify ctxgraph:view_follow_anomalies on pg

SELECT skill, retrieval_id, run_id, rule_id, attempt_id, tip_id, body, tip_followed_llm, tip_followed_emb, kind
  FROM ctxgraph.follow_anomalies WHERE FALSE;
SELECT retrieval_id, kind FROM stig.follow_anomalies WHERE FALSE;
