-- Revert ctxgraph:table_tip_evictions from pg

-- Without the eviction history nothing shows why a tip was retired or undoes it (the versions
-- before this change have no restore_tip, and their readers know no retirement), so the tips it
-- retired are handed back active first. Every retirement comes from evict_tips: no role may set
-- retired_at any other way.
BEGIN;

UPDATE ctxgraph.tips SET retired_at = NULL WHERE retired_at IS NOT NULL;
DROP TABLE ctxgraph.tip_evictions;

COMMIT;
