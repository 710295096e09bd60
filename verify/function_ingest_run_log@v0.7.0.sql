-- Verify ctxgraph:function_ingest_run_log on pg

SELECT 'ctxgraph.ingest_staging()'::regprocedure, 'ctxgraph.ingest_run_log(text)'::regprocedure;
-- The writer's, nobody else's.
SELECT 1 / (pg_catalog.has_function_privilege('ctxgraph_writer', 'ctxgraph.ingest_run_log(text)', 'EXECUTE')
            AND pg_catalog.has_function_privilege('ctxgraph_writer', 'ctxgraph.ingest_staging()', 'EXECUTE')
            AND NOT pg_catalog.has_function_privilege('ctxgraph_analyst', 'ctxgraph.ingest_run_log(text)', 'EXECUTE')
            AND NOT pg_catalog.has_function_privilege('public', 'ctxgraph.ingest_run_log(text)', 'EXECUTE'))::int;

-- Behaviour on stig, rolled back: a staged log (a retrieval line, its attempt line, a retrieval line
-- no attempt follows, the run's end) is written linked and graded; a bad line raises its SQLSTATE
-- with its line number and writes nothing.
DO $$
DECLARE
    run    text := 'sqitch-verify-' || gen_random_uuid();
    tip    bigint;
    loaded record;
    raised text;
BEGIN
    INSERT INTO stig.tips (rule_id, body) VALUES ('sqitch_verify_rule', 'probe') RETURNING id INTO tip;
    PERFORM ctxgraph.ingest_staging();
    INSERT INTO pg_temp.ctxgraph_run_log (line, kind, run_id, rule_id, attempt_number, retrieved_at, tip_ids,
                                          similarity_scores, started_at, ended_at, passed, failure_mode)
    VALUES (3, 'retrieval', run, 'sqitch_verify_rule', 1, '2026-01-01 10:00+00', ARRAY[tip], ARRAY[0.5], NULL, NULL, NULL, NULL),
           (4, 'attempt', run, 'sqitch_verify_rule', 1, NULL, NULL, NULL, '2026-01-01 10:01+00', '2026-01-01 10:02+00', false, 'health_failure'),
           (5, 'retrieval', run, 'sqitch_verify_rule', 1, '2026-01-01 10:03+00', ARRAY[tip], ARRAY[0.4], NULL, NULL, NULL, NULL),
           (6, 'run_end', run, NULL, NULL, NULL, NULL, NULL, NULL, '2026-01-01 11:00+00', NULL, NULL);
    SELECT * INTO loaded FROM ctxgraph.ingest_run_log('stig');
    IF loaded.run_id IS DISTINCT FROM run OR loaded.attempts <> 1 OR loaded.retrievals <> 2 THEN
        RAISE EXCEPTION 'verify: ingest_run_log returned %', loaded;
    END IF;
    IF (SELECT count(*) FROM ctxgraph.tip_retrievals AS r JOIN ctxgraph.attempts AS a ON a.skill = r.skill AND a.id = r.attempt_id
         WHERE r.skill = 'stig' AND r.run_id = run AND r.retrieved_at = '2026-01-01 10:00+00'
           AND r.outcome_value = ctxgraph.graded_outcome('stig', false, 1, 'health_failure') AND a.passed IS FALSE) <> 1
       OR (SELECT count(*) FROM ctxgraph.tip_retrievals AS r
            WHERE r.skill = 'stig' AND r.run_id = run AND r.attempt_id IS NULL AND r.outcome_value IS NULL) <> 1
       OR NOT EXISTS (SELECT 1 FROM ctxgraph.runs AS r WHERE r.skill = 'stig' AND r.id = run
                         AND r.started_at = '2026-01-01 10:00+00' AND r.ended_at = '2026-01-01 11:00+00') THEN
        RAISE EXCEPTION 'verify: ingest_run_log did not write the log as the per-call path would';
    END IF;

    PERFORM ctxgraph.ingest_staging();
    INSERT INTO pg_temp.ctxgraph_run_log (line, kind, run_id, rule_id, attempt_number, retrieved_at, tip_ids, similarity_scores)
    VALUES (7, 'retrieval', run || '-2', 'sqitch_verify_rule', 1, now(), ARRAY[tip], ARRAY[0.5]),
           (9, 'retrieval', run || '-2', 'sqitch_verify_rule', 1, now(), ARRAY[-1]::bigint[], ARRAY[0.5]);
    BEGIN
        PERFORM ctxgraph.ingest_run_log('stig');
        RAISE EXCEPTION 'verify: ingest_run_log accepted an unknown tip';
    EXCEPTION WHEN foreign_key_violation THEN
        GET STACKED DIAGNOSTICS raised = MESSAGE_TEXT;
    END;
    IF raised IS DISTINCT FROM 'ctxgraph: run log line 9: no stig tip with id -1'
       OR EXISTS (SELECT 1 FROM ctxgraph.runs AS r WHERE r.skill = 'stig' AND r.id = run || '-2') THEN
        RAISE EXCEPTION 'verify: a bad line said % or left rows behind', raised;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
