-- Verify ctxgraph:def27_tip_followed on pg

SELECT tip_followed_llm, tip_followed_emb, tip_followed_computed_at FROM ctxgraph.tip_retrievals WHERE FALSE;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_roles r
 WHERE r.rolname = 'ctxgraph_scorer'
   AND pg_catalog.has_column_privilege(r.oid, 'ctxgraph.tip_retrievals', 'tip_followed_llm', 'update')
   AND NOT pg_catalog.has_column_privilege(r.oid, 'ctxgraph.tip_retrievals', 'outcome_value', 'update');
