-- Verify ctxgraph:column_follow_probability on pg

SELECT follow_probability FROM ctxgraph.tip_retrievals WHERE FALSE;
SELECT follow_probability FROM stig.tip_retrievals WHERE FALSE;
SELECT signal_status, calibration_id, signal_version, follow_evidence FROM ctxgraph.retrieval_scores WHERE FALSE;
SELECT 1 / count(*) FROM pg_catalog.pg_constraint
 WHERE conname = 'retrieval_scores_calibration_fkey' AND conrelid = 'ctxgraph.retrieval_scores'::regclass
   AND confrelid = 'ctxgraph.follow_calibrations'::regclass;
-- Privileges both ways, on the parent and on every skill's partition: the scorer updates the
-- probability, the writer can neither insert nor update it but still inserts what it logs.
SELECT 1 / count(*) FILTER (WHERE has_column_privilege('ctxgraph_scorer', t, 'follow_probability', 'UPDATE'))
           / (count(*) FILTER (WHERE NOT has_column_privilege('ctxgraph_writer', t, 'follow_probability', 'INSERT')
                                 AND NOT has_column_privilege('ctxgraph_writer', t, 'follow_probability', 'UPDATE')
                                 AND NOT has_column_privilege('ctxgraph_scorer', t, 'follow_probability', 'INSERT')
                                 AND has_column_privilege('ctxgraph_writer', t, 'rank', 'INSERT'))
              = count(*))::int
  FROM (SELECT 'ctxgraph.tip_retrievals'::regclass AS t
        UNION ALL
        SELECT i.inhrelid::regclass FROM pg_catalog.pg_inherits AS i
         WHERE i.inhparent = 'ctxgraph.tip_retrievals'::regclass) AS tables;
-- The CHECK refuses NaN and values outside [0, 1] (rolled back).
DO $$
DECLARE
    tip bigint;
    rid bigint;
    bad double precision;
BEGIN
    INSERT INTO ctxgraph.tips (skill, rule_id, body) VALUES ('stig', 'verify-rule', 'verify tip') RETURNING id INTO tip;
    SELECT r INTO rid FROM ctxgraph.log_retrievals('stig', 'verify-run', 'verify-rule', ARRAY[tip], ARRAY[0.9]) AS r;
    UPDATE ctxgraph.tip_retrievals SET follow_probability = 0.25 WHERE skill = 'stig' AND id = rid;
    FOREACH bad IN ARRAY '{NaN,-0.01,1.01,Infinity}'::double precision[] LOOP
        BEGIN
            UPDATE ctxgraph.tip_retrievals SET follow_probability = bad WHERE skill = 'stig' AND id = rid;
            RAISE EXCEPTION 'verify: follow_probability accepted %', bad;
        EXCEPTION WHEN check_violation THEN NULL;
        END;
    END LOOP;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
