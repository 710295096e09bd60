-- Revert ctxgraph:column_tip_evictions_actors from pg

BEGIN;

DROP TRIGGER tip_evictions_stamp_restore ON ctxgraph.tip_evictions;
DROP FUNCTION ctxgraph._tip_evictions_stamp_restore();
ALTER TABLE ctxgraph.tip_evictions
    DROP COLUMN retired_by,
    DROP COLUMN retired_logged_at,
    DROP COLUMN restored_by,
    DROP COLUMN restored_logged_at;

COMMIT;
