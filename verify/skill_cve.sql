-- Verify ctxgraph:skill_cve on pg

SELECT 1 / COUNT(*) FROM ctxgraph.skills WHERE name = 'cve' AND grading = 'binary';
SELECT skill, id, started_at, ended_at FROM cve.runs WHERE FALSE;
SELECT skill, id, run_id, rule_id, attempt_number, passed, failure_mode, approach, started_at, ended_at
  FROM cve.attempts WHERE FALSE;
SELECT skill, id, rule_id, body, embedding, created_at, retired_at FROM cve.tips WHERE FALSE;
SELECT skill, id, run_id, attempt_id, tip_id, rule_id, rank, similarity_score, outcome_value,
       outcome_confidence, retrieved_at
  FROM cve.tip_retrievals WHERE FALSE;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_roles r
 WHERE r.rolname = 'ctxgraph_analyst' AND pg_catalog.has_table_privilege(r.oid, 'cve.tip_retrievals', 'select')
   AND NOT pg_catalog.has_table_privilege(r.oid, 'cve.tip_retrievals', 'insert');
