-- Verify ctxgraph:function_record_outcome on pg

SELECT 'ctxgraph.record_outcome(text, bigint, boolean, text, timestamptz)'::regprocedure;
-- The write path belongs to the writer alone.
SELECT 1 / (pg_catalog.has_function_privilege('ctxgraph_writer', 'ctxgraph.record_outcome(text, bigint, boolean, text, timestamptz)', 'EXECUTE')
            AND NOT pg_catalog.has_function_privilege('ctxgraph_analyst', 'ctxgraph.record_outcome(text, bigint, boolean, text, timestamptz)', 'EXECUTE')
            AND NOT pg_catalog.has_function_privilege('public', 'ctxgraph.record_outcome(text, bigint, boolean, text, timestamptz)', 'EXECUTE'))::int;

-- Behaviour on stig, in a fresh run, rolled back: the verdict is stored on the attempt, exactly
-- its linked retrievals get graded_outcome() and outcome.confidence, recording again corrects
-- it, and the documented errors are raised.
BEGIN;
DO $$
DECLARE
    run      text := 'sqitch-verify-' || gen_random_uuid();
    tip      bigint;
    ids      bigint[];
    unlinked bigint[];
    attempt  bigint;
    changed  integer;
    probe    record;
BEGIN
    INSERT INTO stig.tips (rule_id, body) VALUES ('sqitch_verify_rule', 'probe') RETURNING id INTO tip;
    ids := ARRAY(SELECT ctxgraph.log_retrievals('stig', run, 'sqitch_verify_rule', ARRAY[tip], ARRAY[0.5]));
    unlinked := ARRAY(SELECT ctxgraph.log_retrievals('stig', run, 'sqitch_verify_rule', ARRAY[tip], ARRAY[0.5]));
    attempt := ctxgraph.save_attempt('stig', run, 'sqitch_verify_rule', 2, NULL, '2026-01-01 10:00Z');
    PERFORM ctxgraph.update_retrieval_attempt_ids('stig', ids, attempt);

    -- (each call is its own statement: a check in the same statement would not see its writes)
    changed := ctxgraph.record_outcome('stig', attempt, false, 'health_failure', '2026-01-01 10:05Z');
    IF changed <> 1
       OR NOT EXISTS (SELECT 1 FROM ctxgraph.attempts AS a
                       WHERE a.skill = 'stig' AND a.id = attempt AND a.passed = false
                         AND a.failure_mode = 'health_failure' AND a.ended_at = '2026-01-01 10:05Z')
       OR NOT EXISTS (SELECT 1 FROM ctxgraph.tip_retrievals AS r
                       WHERE r.skill = 'stig' AND r.id = ids[1]
                         AND r.outcome_value = ctxgraph.graded_outcome('stig', false, 2, 'health_failure')
                         AND r.outcome_confidence = ctxgraph.param('outcome.confidence'))
       OR EXISTS (SELECT 1 FROM ctxgraph.tip_retrievals AS r
                   WHERE r.skill = 'stig' AND r.id = unlinked[1] AND r.outcome_value IS NOT NULL) THEN
        RAISE EXCEPTION 'record_outcome did not record the failure on the attempt and exactly its retrievals';
    END IF;
    changed := ctxgraph.record_outcome('stig', attempt, true);
    IF changed <> 1
       OR NOT EXISTS (SELECT 1 FROM ctxgraph.tip_retrievals AS r
                       WHERE r.skill = 'stig' AND r.id = ids[1] AND r.outcome_value = ctxgraph.graded_outcome('stig', true, 2))
       OR NOT EXISTS (SELECT 1 FROM ctxgraph.attempts AS a
                       WHERE a.skill = 'stig' AND a.id = attempt AND a.passed AND a.failure_mode IS NULL) THEN
        RAISE EXCEPTION 'recording again did not correct the result';
    END IF;

    FOR probe IN SELECT * FROM (VALUES
        ('P0002', format('SELECT ctxgraph.record_outcome(%L, -1, true)', 'stig')),
        ('P0002', format('SELECT ctxgraph.record_outcome(%L, %s, true)', 'cve', attempt)),
        ('22004', format('SELECT ctxgraph.record_outcome(%L, NULL, true)', 'stig')),
        ('22004', format('SELECT ctxgraph.record_outcome(%L, %s, NULL)', 'stig', attempt)),
        ('22004', format('SELECT ctxgraph.record_outcome(NULL, %s, true)', attempt)),
        ('22023', format('SELECT ctxgraph.record_outcome(%L, %s, true)', 'sqitch_verify_no_such_skill', attempt)),
        ('22023', format('SELECT ctxgraph.record_outcome(%L, %s, true, %L)', 'stig', attempt, 'clean_failure')),
        ('22023', format('SELECT ctxgraph.record_outcome(%L, %s, false, %L)', 'stig', attempt, 'sqitch_verify_no_such_mode')),
        ('22023', format('SELECT ctxgraph.record_outcome(%L, %s, true, NULL, %L)', 'stig', attempt, '2026-01-01 09:00Z'))
    ) AS p (sqlstate, statement) LOOP
        BEGIN
            EXECUTE probe.statement;
            RAISE EXCEPTION 'no error' USING ERRCODE = 'VRFY1';
        EXCEPTION WHEN OTHERS THEN
            IF SQLSTATE <> probe.sqlstate THEN
                RAISE EXCEPTION 'expected SQLSTATE % from %, got % (%)', probe.sqlstate, probe.statement, SQLSTATE, SQLERRM;
            END IF;
        END;
    END LOOP;
END
$$;
ROLLBACK;
