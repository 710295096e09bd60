-- Verify ctxgraph:function_log_retrievals on pg

SELECT 'ctxgraph.log_retrievals(text, text, text, bigint[], double precision[], timestamptz)'::regprocedure;
-- The write path belongs to the writer alone.
SELECT 1 / (pg_catalog.has_function_privilege('ctxgraph_writer', 'ctxgraph.log_retrievals(text, text, text, bigint[], double precision[], timestamptz)', 'EXECUTE')
            AND NOT pg_catalog.has_function_privilege('ctxgraph_analyst', 'ctxgraph.log_retrievals(text, text, text, bigint[], double precision[], timestamptz)', 'EXECUTE')
            AND NOT pg_catalog.has_function_privilege('public', 'ctxgraph.log_retrievals(text, text, text, bigint[], double precision[], timestamptz)', 'EXECUTE'))::int;

-- Behaviour on two probe tips of stig, in a fresh run, rolled back: one row per tip, rank is the
-- array position, ids come back in rank order, the run is created, bad input raises.
BEGIN;
DO $$
DECLARE
    run   text := 'sqitch-verify-' || gen_random_uuid();
    tip_a bigint;
    tip_b bigint;
    ids   bigint[];
    probe record;
BEGIN
    INSERT INTO stig.tips (rule_id, body) VALUES ('sqitch_verify_rule', 'probe a') RETURNING id INTO tip_a;
    INSERT INTO stig.tips (rule_id, body) VALUES ('sqitch_verify_rule', 'probe b') RETURNING id INTO tip_b;
    ids := ARRAY(SELECT ctxgraph.log_retrievals('stig', run, 'sqitch_verify_rule', ARRAY[tip_b, tip_a],
                                                ARRAY[0.9, NULL], '2026-01-01 10:00Z'));
    IF cardinality(ids) <> 2
       OR (SELECT array_agg(r.id ORDER BY r.rank) FROM ctxgraph.tip_retrievals AS r WHERE r.skill = 'stig' AND r.run_id = run) <> ids
       OR NOT EXISTS (SELECT 1 FROM ctxgraph.tip_retrievals AS r
                       WHERE r.skill = 'stig' AND r.id = ids[1] AND r.tip_id = tip_b AND r.rank = 1
                         AND r.similarity_score = 0.9 AND r.rule_id = 'sqitch_verify_rule'
                         AND r.retrieved_at = '2026-01-01 10:00Z' AND r.attempt_id IS NULL AND r.outcome_value IS NULL)
       OR NOT EXISTS (SELECT 1 FROM ctxgraph.tip_retrievals AS r
                       WHERE r.skill = 'stig' AND r.id = ids[2] AND r.tip_id = tip_a AND r.rank = 2 AND r.similarity_score IS NULL) THEN
        RAISE EXCEPTION 'log_retrievals did not log the batch in rank order';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM ctxgraph.runs AS r WHERE r.skill = 'stig' AND r.id = run) THEN
        RAISE EXCEPTION 'log_retrievals did not create the run';
    END IF;
    IF EXISTS (SELECT ctxgraph.log_retrievals('stig', run, 'sqitch_verify_rule', '{}', '{}')) THEN
        RAISE EXCEPTION 'an empty batch logged something';
    END IF;

    FOR probe IN SELECT * FROM (VALUES
        ('22023', format('SELECT ctxgraph.log_retrievals(%L, %L, %L, ARRAY[%s, %s]::bigint[], ARRAY[0.5])', 'stig', run, 'r', tip_a, tip_b)),
        ('22023', format('SELECT ctxgraph.log_retrievals(%L, %L, %L, ARRAY[%s, %s]::bigint[], ARRAY[0.5, 0.4])', 'stig', run, 'r', tip_a, tip_a)),
        ('22023', format('SELECT ctxgraph.log_retrievals(%L, %L, %L, ARRAY[%s]::bigint[], ARRAY[%L]::float8[])', 'stig', run, 'r', tip_a, 'NaN')),
        ('22004', format('SELECT ctxgraph.log_retrievals(%L, %L, %L, ARRAY[%s, NULL]::bigint[], ARRAY[0.5, 0.4])', 'stig', run, 'r', tip_a)),
        ('22004', format('SELECT ctxgraph.log_retrievals(%L, %L, %L, NULL, ARRAY[0.5])', 'stig', run, 'r')),
        ('22004', format('SELECT ctxgraph.log_retrievals(%L, NULL, %L, ARRAY[%s]::bigint[], ARRAY[0.5])', 'stig', 'r', tip_a)),
        ('22004', format('SELECT ctxgraph.log_retrievals(NULL, %L, %L, ARRAY[%s]::bigint[], ARRAY[0.5])', run, 'r', tip_a)),
        ('22023', format('SELECT ctxgraph.log_retrievals(%L, %L, %L, ARRAY[%s]::bigint[], ARRAY[0.5])', 'sqitch_verify_no_such_skill', run, 'r', tip_a)),
        -- a stig tip id is unknown to cve, and -1 to every skill
        ('23503', format('SELECT ctxgraph.log_retrievals(%L, %L, %L, ARRAY[%s]::bigint[], ARRAY[0.5])', 'cve', run, 'r', tip_a)),
        ('23503', format('SELECT ctxgraph.log_retrievals(%L, %L, %L, ARRAY[-1]::bigint[], ARRAY[0.5])', 'stig', run, 'r'))
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
