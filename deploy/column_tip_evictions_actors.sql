-- Deploy ctxgraph:column_tip_evictions_actors to pg
-- requires: table_tip_evictions
-- requires: function_evict_tips

-- Who retired or restored a tip, and when that really happened. retired_at and restored_at are the
-- as_of instants the caller gave, which may lie anywhere (evict_tips('stig', now() + '1 year',
-- false) retires now but recorded next year for both the retirement and its restore), and the
-- table kept neither the real time nor the role. Now each row also holds the session's login role
-- (session_user: evict_tips and restore_tip run with their owner's rights, so current_user would
-- name the owner) and the server's clock when the row was written (clock_timestamp()), for the
-- retirement by column defaults, for the restore by a trigger on the update that sets restored_at.
-- Rows written before this change keep NULL there: unknown, not invented.
BEGIN;

ALTER TABLE ctxgraph.tip_evictions
    ADD COLUMN retired_by text,
    ADD COLUMN retired_logged_at timestamptz,
    ADD COLUMN restored_by text,
    ADD COLUMN restored_logged_at timestamptz;
-- Defaults set after the columns exist, so the rows already there are not stamped with this deploy.
ALTER TABLE ctxgraph.tip_evictions
    ALTER COLUMN retired_by SET DEFAULT session_user,
    ALTER COLUMN retired_logged_at SET DEFAULT clock_timestamp();

COMMENT ON COLUMN ctxgraph.tip_evictions.retired_by IS
    'The login role (session_user) of the session that retired the tip; NULL for rows written before it was kept.';
COMMENT ON COLUMN ctxgraph.tip_evictions.retired_logged_at IS
    'The server''s clock when the retirement was written (retired_at is the as_of it was given); NULL for rows written before it was kept.';
COMMENT ON COLUMN ctxgraph.tip_evictions.restored_by IS
    'The login role (session_user) of the session that restored the tip; NULL while retired.';
COMMENT ON COLUMN ctxgraph.tip_evictions.restored_logged_at IS
    'The server''s clock when the restore was written (restored_at is the as_of it was given); NULL while retired.';

CREATE FUNCTION ctxgraph._tip_evictions_stamp_restore()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
BEGIN
    IF NEW.restored_at IS NOT NULL AND OLD.restored_at IS NULL THEN
        NEW.restored_by := session_user;
        NEW.restored_logged_at := clock_timestamp();
    END IF;
    RETURN NEW;
END
$$;

COMMENT ON FUNCTION ctxgraph._tip_evictions_stamp_restore() IS
    'Private: stamps a restore''s login role and the server''s clock on the tip_evictions row restore_tip closes.';
REVOKE ALL ON FUNCTION ctxgraph._tip_evictions_stamp_restore() FROM PUBLIC;

CREATE TRIGGER tip_evictions_stamp_restore BEFORE UPDATE OF restored_at ON ctxgraph.tip_evictions
    FOR EACH ROW EXECUTE FUNCTION ctxgraph._tip_evictions_stamp_restore();

COMMIT;
