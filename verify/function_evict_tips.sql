-- Verify ctxgraph:function_evict_tips on pg

SELECT 'ctxgraph.evict_tips(text, timestamptz, boolean)'::regprocedure, 'ctxgraph.restore_tip(text, bigint, timestamptz)'::regprocedure;
SELECT 1 / has_function_privilege('ctxgraph_writer', 'ctxgraph.evict_tips(text, timestamptz, boolean)', 'EXECUTE')::int;
SELECT 1 / (NOT has_function_privilege('ctxgraph_ranker', 'ctxgraph.evict_tips(text, timestamptz, boolean)', 'EXECUTE'))::int;
SELECT 1 / count(*)::int FROM ctxgraph.parameters WHERE name = 'eviction.max_unfitted_tips';
-- Behaviour, rolled back: on a skill never fitted a dry run answers and a retiring run refuses
-- (55000); on a current fit a retiring run retires nothing without evidence; restoring a tip that
-- is not retired answers false.
DO $$
DECLARE
    tip bigint;
BEGIN
    DELETE FROM ctxgraph.tip_effects WHERE skill = 'stig';
    DELETE FROM ctxgraph.tip_effect_fits WHERE skill = 'stig';
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'verify tip') RETURNING id INTO tip;
    SET LOCAL client_min_messages = error;
    PERFORM ctxgraph.evict_tips('stig', '2026-01-02');
    BEGIN
        PERFORM ctxgraph.evict_tips('stig', '2026-01-02', dry_run => false);
        RAISE EXCEPTION 'verify: evict_tips retired on a skill never fitted';
    EXCEPTION WHEN object_not_in_prerequisite_state THEN NULL;
    END;
    PERFORM ctxgraph.tip_fit_staging();
    INSERT INTO pg_temp.ctxgraph_tip_fit (tip_id, attempts, followed_attempts, method, evidence_version)
    SELECT t.id, 0, 0, 'no_evidence', coalesce(s.evidence_version, 0)
      FROM ctxgraph.tips AS t LEFT JOIN ctxgraph.tip_stats AS s ON s.skill = t.skill AND s.tip_id = t.id
     WHERE t.skill = 'stig';
    PERFORM ctxgraph.write_tip_fit('stig', now(), fp.evidence_version, fp.parameters, '{}')
       FROM ctxgraph._tip_effects_fingerprint('stig') AS fp;
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
