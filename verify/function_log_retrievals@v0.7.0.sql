-- Verify ctxgraph:function_log_retrievals on pg

SELECT 'ctxgraph.log_retrievals(text, text, text, bigint[], double precision[], timestamptz)'::regprocedure;
SELECT 1 / has_function_privilege('ctxgraph_writer', 'ctxgraph.log_retrievals(text, text, text, bigint[], double precision[], timestamptz)', 'EXECUTE')::int;
-- Behaviour, rolled back: a batch gets ranks in order, an empty batch logs nothing (not even the
-- run), an unknown tip is 23503, mismatched arrays are 22023.
DO $$
DECLARE
    tip1 bigint;
    tip2 bigint;
    ids  bigint[];
BEGIN
    INSERT INTO ctxgraph.tips (skill, rule_id, body) VALUES ('stig', 'verify-rule', 'verify tip one') RETURNING id INTO tip1;
    INSERT INTO ctxgraph.tips (skill, rule_id, body) VALUES ('stig', 'verify-rule', 'verify tip two') RETURNING id INTO tip2;
    ids := ARRAY(SELECT ctxgraph.log_retrievals('stig', 'verify-run', 'verify-rule', ARRAY[tip2, tip1], ARRAY[0.9, 0.8]));
    IF (SELECT array_agg(r.tip_id ORDER BY r.rank) FROM ctxgraph.tip_retrievals AS r WHERE r.skill = 'stig' AND r.id = ANY (ids))
       IS DISTINCT FROM ARRAY[tip2, tip1] THEN
        RAISE EXCEPTION 'verify: log_retrievals did not log the batch in rank order';
    END IF;
    PERFORM ctxgraph.log_retrievals('stig', 'verify-empty-run', 'verify-rule', ARRAY[]::bigint[], ARRAY[]::double precision[]);
    IF EXISTS (SELECT 1 FROM ctxgraph.runs WHERE skill = 'stig' AND id = 'verify-empty-run') THEN
        RAISE EXCEPTION 'verify: an empty batch logged its run';
    END IF;
    BEGIN
        PERFORM ctxgraph.log_retrievals('stig', 'verify-run', 'verify-rule', ARRAY[-1]::bigint[], ARRAY[0.5]);
        RAISE EXCEPTION 'verify: log_retrievals accepted an unknown tip';
    EXCEPTION WHEN foreign_key_violation THEN NULL;
    END;
    BEGIN
        PERFORM ctxgraph.log_retrievals('stig', 'verify-run', 'verify-rule', ARRAY[tip1], ARRAY[0.5, 0.4]);
        RAISE EXCEPTION 'verify: log_retrievals accepted mismatched arrays';
    EXCEPTION WHEN invalid_parameter_value THEN NULL;
    END;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
