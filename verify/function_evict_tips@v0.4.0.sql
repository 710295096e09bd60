-- Verify ctxgraph:function_evict_tips on pg

SELECT 'ctxgraph.evict_tips(text, timestamptz, boolean)'::regprocedure;
SELECT 'ctxgraph.restore_tip(text, bigint, timestamptz)'::regprocedure;
SELECT 1 / (to_regprocedure('ctxgraph.restore_tip(text, bigint)') IS NULL)::int;
SELECT 1 / has_function_privilege('ctxgraph_writer', 'ctxgraph.evict_tips(text, timestamptz, boolean)', 'EXECUTE')::int;
SELECT 1 / (NOT has_function_privilege('ctxgraph_ranker', 'ctxgraph.evict_tips(text, timestamptz, boolean)', 'EXECUTE'))::int;
-- Behaviour, rolled back: a tip with no evidence is not retired; restoring a tip that is not
-- retired answers false; NULL as_of is 22004; an unknown skill is 22023.
DO $$
DECLARE
    tip bigint;
BEGIN
    INSERT INTO ctxgraph.tips (skill, rule_id, body) VALUES ('stig', 'verify-rule', 'verify tip') RETURNING id INTO tip;
    IF EXISTS (SELECT 1 FROM ctxgraph.evict_tips('stig', now(), dry_run => false) AS e WHERE e.tip_id = tip) THEN
        RAISE EXCEPTION 'verify: evict_tips retired a tip with no evidence';
    END IF;
    IF ctxgraph.restore_tip('stig', tip) THEN
        RAISE EXCEPTION 'verify: restore_tip restored a tip that was not retired';
    END IF;
    BEGIN
        PERFORM ctxgraph.evict_tips('stig', NULL);
        RAISE EXCEPTION 'verify: evict_tips accepted a NULL as_of';
    EXCEPTION WHEN null_value_not_allowed THEN NULL;
    END;
    BEGIN
        PERFORM ctxgraph.evict_tips('no_such_skill');
        RAISE EXCEPTION 'verify: evict_tips accepted an unknown skill';
    EXCEPTION WHEN invalid_parameter_value THEN NULL;
    END;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
