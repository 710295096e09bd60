-- Verify ctxgraph:table_scoring_state on pg

SELECT tip_sha256, script_sha256, model, prompt_sha256, followed, reasoning, error, response_format, created_at
  FROM ctxgraph.follow_verdicts WHERE FALSE;
SELECT skill, retrieval_id, llm_status, emb_status, judge_model, prompt_sha256, embed_model, embed_mode,
       script_sha256, scored_at
  FROM ctxgraph.retrieval_scores WHERE FALSE;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_roles r
 WHERE r.rolname = 'ctxgraph_scorer' AND pg_catalog.has_table_privilege(r.oid, 'ctxgraph.follow_verdicts', 'insert');
