-- Verify ctxgraph:function_evict_tips on pg

SELECT 'ctxgraph.evict_tips(text, timestamptz, boolean)'::regprocedure, 'ctxgraph.restore_tip(text, bigint, timestamptz)'::regprocedure;
SELECT 1 / has_function_privilege('ctxgraph_writer', 'ctxgraph.evict_tips(text, timestamptz, boolean)', 'EXECUTE')::int;
SELECT 1 / (NOT has_function_privilege('ctxgraph_ranker', 'ctxgraph.evict_tips(text, timestamptz, boolean)', 'EXECUTE'))::int;
-- Behaviour, rolled back: a dry run refits the effects as of its as_of and retires nothing; a tip
-- with no evidence is never retired; restoring a tip that is not retired answers false.
DO $$
DECLARE
    tip bigint;
BEGIN
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'verify tip') RETURNING id INTO tip;
    PERFORM ctxgraph.evict_tips('stig', '2026-01-02');
    IF (SELECT as_of FROM ctxgraph.tip_effects WHERE skill = 'stig' AND tip_id = tip) IS DISTINCT FROM '2026-01-02'::timestamptz THEN
        RAISE EXCEPTION 'verify: evict_tips did not refit the effects as of its as_of';
    END IF;
    IF EXISTS (SELECT 1 FROM ctxgraph.evict_tips('stig', now(), dry_run => false) AS e WHERE e.tip_id = tip)
       OR ctxgraph.restore_tip('stig', tip) THEN
        RAISE EXCEPTION 'verify: evict_tips retired, or restore_tip restored, a tip with no evidence';
    END IF;
    -- A NULL tip id is a missing argument (22004), not an unknown tip.
    BEGIN
        PERFORM ctxgraph.restore_tip('stig', NULL);
        RAISE EXCEPTION 'verify: restore_tip accepted a NULL tip id';
    EXCEPTION WHEN null_value_not_allowed THEN NULL;
    END;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
