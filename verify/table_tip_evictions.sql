-- Verify ctxgraph:table_tip_evictions on pg

SELECT id, skill, tip_id, retired_at, reason, evidence, restored_at FROM ctxgraph.tip_evictions WHERE FALSE;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_constraint
 WHERE conrelid = 'ctxgraph.tip_evictions'::regclass AND contype = 'f' AND confrelid = 'ctxgraph.tips'::regclass;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_index
 WHERE indrelid = 'ctxgraph.tip_evictions'::regclass AND indexrelid = 'ctxgraph.tip_evictions_tip_idx'::regclass;

-- Ranker and analysts read the history; nobody but the owner (through evict_tips and
-- restore_tip, SECURITY DEFINER) writes it.
SELECT 1 / (COUNT(*) = 2)::int FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_ranker', 'ctxgraph_analyst')
   AND pg_catalog.has_table_privilege(r.oid, 'ctxgraph.tip_evictions', 'SELECT')
   AND NOT pg_catalog.has_table_privilege(r.oid, 'ctxgraph.tip_evictions', 'INSERT, UPDATE, DELETE');
SELECT 1 / (NOT pg_catalog.has_table_privilege('ctxgraph_writer', 'ctxgraph.tip_evictions', 'INSERT, UPDATE, DELETE'))::int;

-- Behaviour, rolled back: a restore before its retirement and a row for an unknown tip are refused.
BEGIN;
DO $$
DECLARE
    tip bigint;
BEGIN
    INSERT INTO stig.tips (body) VALUES ('probe') RETURNING id INTO tip;
    INSERT INTO ctxgraph.tip_evictions (skill, tip_id, retired_at, reason, evidence, restored_at)
    VALUES ('stig', tip, '2026-01-02', 'probe', '{}', '2026-01-03');
    BEGIN
        INSERT INTO ctxgraph.tip_evictions (skill, tip_id, retired_at, reason, evidence, restored_at)
        VALUES ('stig', tip, '2026-01-02', 'probe', '{}', '2026-01-01');
        RAISE EXCEPTION 'tip_evictions accepted a restore before the retirement';
    EXCEPTION WHEN check_violation THEN NULL;
    END;
    BEGIN
        INSERT INTO ctxgraph.tip_evictions (skill, tip_id, retired_at, reason, evidence) VALUES ('stig', -1, now(), 'probe', '{}');
        RAISE EXCEPTION 'tip_evictions accepted an unknown tip';
    EXCEPTION WHEN foreign_key_violation THEN NULL;
    END;
END
$$;
ROLLBACK;
