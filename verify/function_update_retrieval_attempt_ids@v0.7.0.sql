-- Verify ctxgraph:function_update_retrieval_attempt_ids on pg

SELECT 'ctxgraph.update_retrieval_attempt_ids(text, bigint[], bigint)'::regprocedure;
-- The write path belongs to the writer alone.
SELECT 1 / (pg_catalog.has_function_privilege('ctxgraph_writer', 'ctxgraph.update_retrieval_attempt_ids(text, bigint[], bigint)', 'EXECUTE')
            AND NOT pg_catalog.has_function_privilege('ctxgraph_analyst', 'ctxgraph.update_retrieval_attempt_ids(text, bigint[], bigint)', 'EXECUTE')
            AND NOT pg_catalog.has_function_privilege('public', 'ctxgraph.update_retrieval_attempt_ids(text, bigint[], bigint)', 'EXECUTE'))::int;

-- Behaviour on stig, in a fresh run, rolled back: linking sets attempt_id and returns the rows
-- changed, linking again is a no-op, an attempt whose result is already recorded passes its
-- outcome on, and the documented errors are raised.
BEGIN;
DO $$
DECLARE
    run        text := 'sqitch-verify-' || gen_random_uuid();
    tip        bigint;
    ids        bigint[];
    other_rule bigint[];
    attempt    bigint;
    recorded   bigint;
    changed    integer;
    probe      record;
BEGIN
    INSERT INTO stig.tips (rule_id, body) VALUES ('sqitch_verify_rule', 'probe') RETURNING id INTO tip;
    ids := ARRAY(SELECT ctxgraph.log_retrievals('stig', run, 'sqitch_verify_rule', ARRAY[tip], ARRAY[0.5]));
    ids := ids || ARRAY(SELECT ctxgraph.log_retrievals('stig', run, 'sqitch_verify_rule', ARRAY[tip], ARRAY[0.4]));
    other_rule := ARRAY(SELECT ctxgraph.log_retrievals('stig', run, 'sqitch_verify_other_rule', ARRAY[tip], ARRAY[0.3]));
    attempt := ctxgraph.save_attempt('stig', run, 'sqitch_verify_rule', 1);

    -- (each call is its own statement: a check in the same statement would not see its writes)
    changed := ctxgraph.update_retrieval_attempt_ids('stig', ids, attempt);
    IF changed <> 2
       OR (SELECT count(*) FROM ctxgraph.tip_retrievals AS r
            WHERE r.skill = 'stig' AND r.id = ANY (ids) AND r.attempt_id = attempt AND r.outcome_value IS NULL) <> 2 THEN
        RAISE EXCEPTION 'update_retrieval_attempt_ids did not link both rows';
    END IF;
    IF ctxgraph.update_retrieval_attempt_ids('stig', ids, attempt) <> 0 THEN
        RAISE EXCEPTION 'linking again changed rows';
    END IF;

    -- Link after the result: the rows receive the attempt's graded outcome at once.
    recorded := ctxgraph.save_attempt('stig', run, 'sqitch_verify_other_rule', 2);
    UPDATE ctxgraph.attempts SET passed = true WHERE skill = 'stig' AND id = recorded;
    changed := ctxgraph.update_retrieval_attempt_ids('stig', other_rule, recorded);
    IF changed <> 1
       OR NOT EXISTS (SELECT 1 FROM ctxgraph.tip_retrievals AS r
                       WHERE r.skill = 'stig' AND r.id = other_rule[1] AND r.attempt_id = recorded
                         AND r.outcome_value = ctxgraph.graded_outcome('stig', true, 2)
                         AND r.outcome_confidence = ctxgraph.param('outcome.confidence')) THEN
        RAISE EXCEPTION 'linking to a recorded attempt did not fill its outcome';
    END IF;

    FOR probe IN SELECT * FROM (VALUES
        ('P0002', format('SELECT ctxgraph.update_retrieval_attempt_ids(%L, %L::bigint[], -1)', 'stig', ids)),
        ('P0002', format('SELECT ctxgraph.update_retrieval_attempt_ids(%L, ARRAY[-1]::bigint[], %s)', 'stig', attempt)),
        -- rows of another rule, and rows already linked to another attempt
        ('22023', format('SELECT ctxgraph.update_retrieval_attempt_ids(%L, %L::bigint[], %s)', 'stig', other_rule, attempt)),
        ('22023', format('SELECT ctxgraph.update_retrieval_attempt_ids(%L, %L::bigint[], %s)', 'stig', ids,
                         ctxgraph.save_attempt('stig', run, 'sqitch_verify_rule', 2))),
        ('22004', format('SELECT ctxgraph.update_retrieval_attempt_ids(%L, NULL, %s)', 'stig', attempt)),
        ('22004', format('SELECT ctxgraph.update_retrieval_attempt_ids(%L, %L::bigint[], NULL)', 'stig', ids)),
        ('22004', format('SELECT ctxgraph.update_retrieval_attempt_ids(%L, ARRAY[NULL]::bigint[], %s)', 'stig', attempt)),
        ('22023', format('SELECT ctxgraph.update_retrieval_attempt_ids(%L, %L::bigint[], %s)', 'sqitch_verify_no_such_skill', ids, attempt))
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
