-- Verify ctxgraph:table_tip_evictions on pg

SELECT id, skill, tip_id, retired_at, reason, evidence, restored_at FROM ctxgraph.tip_evictions WHERE FALSE;
