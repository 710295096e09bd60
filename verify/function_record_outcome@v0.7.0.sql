-- Verify ctxgraph:function_record_outcome on pg

SELECT 'ctxgraph.record_outcome(text, bigint, boolean, text, timestamptz)'::regprocedure;
SELECT 1 / (to_regprocedure('ctxgraph.record_outcome(text, bigint, boolean, text)') IS NULL)::int;
SELECT 1 / has_function_privilege('ctxgraph_writer', 'ctxgraph.record_outcome(text, bigint, boolean, text, timestamptz)', 'EXECUTE')::int;
-- Behaviour, rolled back: recording a result fills exactly the attempt's linked retrievals with
-- its graded outcome; an unknown attempt is P0002; an end before the start is 22023.
DO $$
DECLARE
    tip       bigint;
    attempt   bigint;
    linked    bigint[];
    unlinked  bigint[];
    filled    integer;
BEGIN
    INSERT INTO ctxgraph.tips (skill, rule_id, body) VALUES ('stig', 'verify-rule', 'verify tip') RETURNING id INTO tip;
    linked := ARRAY(SELECT ctxgraph.log_retrievals('stig', 'verify-run', 'verify-rule', ARRAY[tip], ARRAY[0.9]));
    unlinked := ARRAY(SELECT ctxgraph.log_retrievals('stig', 'verify-run', 'verify-rule', ARRAY[tip], ARRAY[0.9]));
    attempt := ctxgraph.save_attempt('stig', 'verify-run', 'verify-rule', 2, NULL, '2026-01-01 10:00+00');
    PERFORM ctxgraph.update_retrieval_attempt_ids('stig', linked, attempt);
    filled := ctxgraph.record_outcome('stig', attempt, true, NULL, '2026-01-01 10:05+00');
    IF filled <> 1
       OR (SELECT outcome_value FROM ctxgraph.tip_retrievals WHERE skill = 'stig' AND id = linked[1])
          IS DISTINCT FROM ctxgraph.graded_outcome('stig', true, 2)
       OR (SELECT outcome_value FROM ctxgraph.tip_retrievals WHERE skill = 'stig' AND id = unlinked[1]) IS NOT NULL THEN
        RAISE EXCEPTION 'verify: record_outcome did not fill exactly the linked retrievals with the graded outcome';
    END IF;
    BEGIN
        PERFORM ctxgraph.record_outcome('stig', -1, true);
        RAISE EXCEPTION 'verify: record_outcome accepted an unknown attempt';
    EXCEPTION WHEN no_data_found THEN NULL;
    END;
    BEGIN
        PERFORM ctxgraph.record_outcome('stig', attempt, true, NULL, '2026-01-01 09:00+00');
        RAISE EXCEPTION 'verify: record_outcome accepted an end before the start';
    EXCEPTION WHEN invalid_parameter_value THEN NULL;
    END;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
