-- Verify ctxgraph:function_save_attempt on pg

SELECT 'ctxgraph.save_attempt(text, text, text, integer, text, timestamptz, timestamptz)'::regprocedure;
-- The write path belongs to the writer alone.
SELECT 1 / (pg_catalog.has_function_privilege('ctxgraph_writer', 'ctxgraph.save_attempt(text, text, text, integer, text, timestamptz, timestamptz)', 'EXECUTE')
            AND NOT pg_catalog.has_function_privilege('ctxgraph_analyst', 'ctxgraph.save_attempt(text, text, text, integer, text, timestamptz, timestamptz)', 'EXECUTE')
            AND NOT pg_catalog.has_function_privilege('public', 'ctxgraph.save_attempt(text, text, text, integer, text, timestamptz, timestamptz)', 'EXECUTE'))::int;

-- Behaviour on the stig skill, in a fresh run, rolled back: the returned id is the saved row,
-- the run is created, and the documented errors are raised.
BEGIN;
DO $$
DECLARE
    run   text := 'sqitch-verify-' || gen_random_uuid();
    new_id bigint;
    probe record;
BEGIN
    new_id := ctxgraph.save_attempt('stig', run, 'sqitch_verify_rule', 1, 'probe', '2026-01-01 10:00Z', '2026-01-01 10:05Z');
    IF NOT EXISTS (SELECT 1 FROM ctxgraph.attempts AS a
                    WHERE a.skill = 'stig' AND a.id = new_id AND a.run_id = run AND a.rule_id = 'sqitch_verify_rule'
                      AND a.attempt_number = 1 AND a.approach = 'probe' AND a.passed IS NULL
                      AND a.ended_at = '2026-01-01 10:05Z') THEN
        RAISE EXCEPTION 'save_attempt did not return the id of the attempt it saved';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM ctxgraph.runs AS r WHERE r.skill = 'stig' AND r.id = run) THEN
        RAISE EXCEPTION 'save_attempt did not create the run';
    END IF;
    IF ctxgraph.save_attempt('stig', run, 'sqitch_verify_rule', 2) <= new_id THEN
        RAISE EXCEPTION 'a second attempt did not get a new id';
    END IF;

    FOR probe IN SELECT * FROM (VALUES
        ('23505', format('SELECT ctxgraph.save_attempt(%L, %L, %L, 1)', 'stig', run, 'sqitch_verify_rule')),
        ('22004', format('SELECT ctxgraph.save_attempt(NULL, %L, %L, 1)', run, 'sqitch_verify_rule')),
        ('22023', format('SELECT ctxgraph.save_attempt(%L, %L, %L, 1)', 'sqitch_verify_no_such_skill', run, 'sqitch_verify_rule')),
        ('22004', format('SELECT ctxgraph.save_attempt(%L, NULL, %L, 1)', 'stig', 'sqitch_verify_rule')),
        ('22004', format('SELECT ctxgraph.save_attempt(%L, %L, %L, NULL)', 'stig', run, 'sqitch_verify_rule')),
        ('22023', format('SELECT ctxgraph.save_attempt(%L, %L, %L, 0)', 'stig', run, 'sqitch_verify_rule')),
        ('22023', format('SELECT ctxgraph.save_attempt(%L, %L, %L, 3)', 'stig', run, ' ')),
        ('22023', format('SELECT ctxgraph.save_attempt(%L, %L, %L, 3, NULL, %L, %L)', 'stig', run, 'sqitch_verify_rule',
                         '2026-01-01 10:00Z', '2026-01-01 09:00Z'))
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
