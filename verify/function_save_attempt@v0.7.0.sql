-- Verify ctxgraph:function_save_attempt on pg

SELECT 'ctxgraph.save_attempt(text, text, text, integer, text, timestamptz, timestamptz)'::regprocedure;
SELECT 1 / has_function_privilege('ctxgraph_writer', 'ctxgraph.save_attempt(text, text, text, integer, text, timestamptz, timestamptz)', 'EXECUTE')::int;
-- Behaviour, rolled back: an attempt is saved once and gets its run; a second save of the same
-- attempt number is 23505; an end before the start is 22023.
DO $$
DECLARE
    saved bigint;
BEGIN
    saved := ctxgraph.save_attempt('stig', 'verify-run', 'verify-rule', 1, NULL, '2026-01-01 10:00+00', '2026-01-01 10:05+00');
    IF NOT EXISTS (SELECT 1 FROM ctxgraph.attempts AS a WHERE a.skill = 'stig' AND a.id = saved
                     AND a.run_id = 'verify-run' AND a.attempt_number = 1)
       OR NOT EXISTS (SELECT 1 FROM ctxgraph.runs AS r WHERE r.skill = 'stig' AND r.id = 'verify-run') THEN
        RAISE EXCEPTION 'verify: save_attempt did not save the attempt and its run';
    END IF;
    BEGIN
        PERFORM ctxgraph.save_attempt('stig', 'verify-run', 'verify-rule', 1);
        RAISE EXCEPTION 'verify: save_attempt saved the same attempt twice';
    EXCEPTION WHEN unique_violation THEN NULL;
    END;
    BEGIN
        PERFORM ctxgraph.save_attempt('stig', 'verify-run', 'verify-rule', 2, NULL, '2026-01-01 10:00+00', '2026-01-01 09:00+00');
        RAISE EXCEPTION 'verify: save_attempt accepted an end before the start';
    EXCEPTION WHEN invalid_parameter_value THEN NULL;
    END;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
