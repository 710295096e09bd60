-- Verify ctxgraph:function_graded_outcome on pg

SELECT 'ctxgraph.graded_outcome(text, boolean, integer, text)'::regprocedure;
SELECT 'ctxgraph._require_skill(text)'::regprocedure;
SELECT 1 / (COUNT(*) = 4)::int FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_writer', 'ctxgraph_scorer', 'ctxgraph_ranker', 'ctxgraph_analyst')
   AND pg_catalog.has_function_privilege(r.oid, 'ctxgraph.graded_outcome(text, boolean, integer, text)', 'EXECUTE');

-- Behaviour against the parameters in force (operators tune them), on two probe skills of each
-- grading, registered only inside this rolled-back transaction.
BEGIN;
INSERT INTO ctxgraph.skills (name, grading) VALUES ('sqitch_verify_graded', 'graded'), ('sqitch_verify_binary', 'binary');
DO $$
DECLARE
    early_last integer := floor(ctxgraph.param('outcome.pass.early_last_attempt'))::integer;
    mode       record;
    probe      record;
BEGIN
    -- Graded passes by attempt number.
    IF ctxgraph.graded_outcome('sqitch_verify_graded', true, 1) IS DISTINCT FROM ctxgraph.param('outcome.pass.first_attempt') THEN
        RAISE EXCEPTION 'graded pass on attempt 1 is not outcome.pass.first_attempt';
    END IF;
    IF early_last >= 2 AND ctxgraph.graded_outcome('sqitch_verify_graded', true, early_last)
                           IS DISTINCT FROM ctxgraph.param('outcome.pass.early') THEN
        RAISE EXCEPTION 'graded pass on attempt % is not outcome.pass.early', early_last;
    END IF;
    IF ctxgraph.graded_outcome('sqitch_verify_graded', true, greatest(early_last, 1) + 1)
       IS DISTINCT FROM ctxgraph.param('outcome.pass.late') THEN
        RAISE EXCEPTION 'graded pass after the early attempts is not outcome.pass.late';
    END IF;
    -- Graded failures by their mode's parameter; binary skills ignore attempt and mode.
    FOR mode IN SELECT name, outcome_parameter FROM ctxgraph.failure_modes LOOP
        IF ctxgraph.graded_outcome('sqitch_verify_graded', false, 2, mode.name) IS DISTINCT FROM ctxgraph.param(mode.outcome_parameter)
           OR ctxgraph.graded_outcome('sqitch_verify_binary', false, 2, mode.name) IS DISTINCT FROM ctxgraph.param('outcome.binary.fail') THEN
            RAISE EXCEPTION 'failure mode % is not graded by its parameter', mode.name;
        END IF;
    END LOOP;
    IF ctxgraph.graded_outcome('sqitch_verify_binary', true, 7) IS DISTINCT FROM ctxgraph.param('outcome.binary.pass')
       OR ctxgraph.graded_outcome('sqitch_verify_binary', false, 1) IS DISTINCT FROM ctxgraph.param('outcome.binary.fail') THEN
        RAISE EXCEPTION 'binary outcomes are not outcome.binary.pass / outcome.binary.fail';
    END IF;

    -- The documented errors.
    FOR probe IN SELECT * FROM (VALUES
        ('22004', $q$SELECT ctxgraph.graded_outcome(NULL, true, 1)$q$),
        ('22023', $q$SELECT ctxgraph.graded_outcome('sqitch_verify_no_such_skill', true, 1)$q$),
        ('22004', $q$SELECT ctxgraph.graded_outcome('sqitch_verify_graded', NULL, 1)$q$),
        ('22004', $q$SELECT ctxgraph.graded_outcome('sqitch_verify_graded', true, NULL)$q$),
        ('22023', $q$SELECT ctxgraph.graded_outcome('sqitch_verify_graded', true, 0)$q$),
        ('22023', $q$SELECT ctxgraph.graded_outcome('sqitch_verify_graded', false, 1, 'sqitch_verify_no_such_mode')$q$),
        ('22023', $q$SELECT ctxgraph.graded_outcome('sqitch_verify_graded', true, 1, 'clean_failure')$q$),
        ('22023', $q$SELECT ctxgraph.graded_outcome('sqitch_verify_graded', false, 1)$q$),
        ('22023', $q$SELECT ctxgraph.graded_outcome('sqitch_verify_binary', true, 1, 'clean_failure')$q$)
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
