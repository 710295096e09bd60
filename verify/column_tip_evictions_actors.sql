-- Verify ctxgraph:column_tip_evictions_actors on pg

BEGIN;

SELECT retired_by, retired_logged_at, restored_by, restored_logged_at FROM ctxgraph.tip_evictions WHERE FALSE;
SELECT 1 / count(*) FROM pg_catalog.pg_trigger
 WHERE tgrelid = 'ctxgraph.tip_evictions'::regclass AND tgname = 'tip_evictions_stamp_restore';
-- A retirement and its restore are stamped with the session's role and the clock, whatever as_of
-- says (rolled back).
DO $$
DECLARE
    tip bigint;
    e   ctxgraph.tip_evictions;
BEGIN
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'verify eviction actors') RETURNING id INTO tip;
    INSERT INTO ctxgraph.tip_evictions (skill, tip_id, retired_at, reason, evidence)
    VALUES ('stig', tip, '2099-01-01 00:00+00', 'verify', '{}');
    UPDATE ctxgraph.tip_evictions SET restored_at = '2099-01-02 00:00+00' WHERE tip_id = tip;
    SELECT * INTO e FROM ctxgraph.tip_evictions WHERE tip_id = tip;
    IF e.retired_by IS DISTINCT FROM session_user::text OR e.restored_by IS DISTINCT FROM session_user::text
       OR e.retired_logged_at > now() + interval '1 hour' OR e.restored_logged_at < e.retired_logged_at THEN
        RAISE EXCEPTION 'verify: tip_evictions stamps %', row_to_json(e);
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;

ROLLBACK;
