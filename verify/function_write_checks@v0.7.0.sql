-- Verify ctxgraph:function_write_checks on pg

SELECT 'ctxgraph._id_problem(text, text)'::regprocedure,
       'ctxgraph._retrieval_batch_problem(text, text, bigint[], double precision[], timestamptz)'::regprocedure,
       'ctxgraph._missing_tips(text, bigint[])'::regprocedure,
       'ctxgraph._attempt_problem(text, text, integer, timestamptz, timestamptz)'::regprocedure,
       'ctxgraph._outcome_problem(text, text, boolean, integer, text)'::regprocedure,
       'ctxgraph._raise_problem(text, text, text, bigint)'::regprocedure;
-- The writer runs the helpers the write path calls; PUBLIC runs none of them.
SELECT 1 / (pg_catalog.has_function_privilege('ctxgraph_writer', 'ctxgraph._attempt_problem(text, text, integer, timestamptz, timestamptz)', 'EXECUTE')
            AND NOT pg_catalog.has_function_privilege('ctxgraph_ranker', 'ctxgraph._attempt_problem(text, text, integer, timestamptz, timestamptz)', 'EXECUTE')
            AND NOT pg_catalog.has_function_privilege('public', 'ctxgraph._missing_tips(text, bigint[])', 'EXECUTE')
            AND NOT pg_catalog.has_function_privilege('public', 'ctxgraph._raise_problem(text, text, text, bigint)', 'EXECUTE'))::int;

-- Behaviour on known inputs: a clean batch has no problem; each bad one returns its first problem
-- with its SQLSTATE; _raise_problem raises it and names the line. Rolled back.
DO $$
DECLARE
    p record;
    raised text;
BEGIN
    IF EXISTS (SELECT 1 FROM ctxgraph._retrieval_batch_problem('r', 'x', ARRAY[1, 2]::bigint[], ARRAY[0.5, NULL], now()))
       OR EXISTS (SELECT 1 FROM ctxgraph._attempt_problem('r', 'x', 1, now(), now()))
       OR EXISTS (SELECT 1 FROM ctxgraph._outcome_problem('stig', 'graded', false, 2, 'clean_failure')) THEN
        RAISE EXCEPTION 'verify: a clean input reported a problem';
    END IF;
    SELECT * INTO p FROM ctxgraph._retrieval_batch_problem('r', NULL, ARRAY[1, 1]::bigint[], ARRAY[0.5], now());
    IF p.sqlstate IS DISTINCT FROM '22004' THEN RAISE EXCEPTION 'verify: NULL rule_id gave %', p.sqlstate; END IF;
    SELECT * INTO p FROM ctxgraph._retrieval_batch_problem('r', 'x', ARRAY[1, 1]::bigint[], ARRAY[0.5], now());
    IF p.message IS DISTINCT FROM 'ctxgraph: 2 tip ids but 1 similarity scores' OR p.hint IS NULL THEN
        RAISE EXCEPTION 'verify: mismatched arrays gave %', p.message;
    END IF;
    SELECT * INTO p FROM ctxgraph._retrieval_batch_problem('r', 'x', ARRAY[[1], [2]]::bigint[], ARRAY[[0.5], [0.4]], now());
    IF p.sqlstate IS DISTINCT FROM '22023' THEN RAISE EXCEPTION 'verify: a 2-D array gave %', p.sqlstate; END IF;
    SELECT * INTO p FROM ctxgraph._retrieval_batch_problem('r', 'x', ARRAY[1, 1]::bigint[], ARRAY[0.5, 0.4], now());
    IF p.message IS DISTINCT FROM 'ctxgraph: a tip appears twice in one retrieval batch' THEN
        RAISE EXCEPTION 'verify: a duplicate tip gave %', p.message;
    END IF;
    IF (SELECT array_agg(m) FROM ctxgraph._missing_tips('stig', ARRAY[-1, -2]::bigint[]) AS m) IS DISTINCT FROM ARRAY[-1, -2]::bigint[] THEN
        RAISE EXCEPTION 'verify: _missing_tips missed ids no tip has';
    END IF;
    -- The id rule: a tab, a zero-width space or a 201st character is refused; 200 plain ones pass.
    SELECT * INTO p FROM ctxgraph._retrieval_batch_problem(E'r\t1', 'x', ARRAY[1]::bigint[], ARRAY[0.5], now());
    IF p.message IS DISTINCT FROM 'ctxgraph: run_id must not contain whitespace, control or invisible characters, got U+0009 at character 2' THEN
        RAISE EXCEPTION 'verify: a tab in run_id gave %', p.message;
    END IF;
    IF (SELECT sqlstate FROM ctxgraph._attempt_problem('r', U&'x\200B', 1, NULL, NULL)) IS DISTINCT FROM '22023'
       OR (SELECT sqlstate FROM ctxgraph._attempt_problem(repeat('r', 201), 'x', 1, NULL, NULL)) IS DISTINCT FROM '22023'
       OR EXISTS (SELECT 1 FROM ctxgraph._attempt_problem(repeat('r', 200), 'x', 1, NULL, NULL)) THEN
        RAISE EXCEPTION 'verify: save_attempt''s checks do not follow the id rule';
    END IF;
    -- A similarity is a cosine: 1 and -1 pass, Infinity and 42 do not.
    IF EXISTS (SELECT 1 FROM ctxgraph._retrieval_batch_problem('r', 'x', ARRAY[1, 2]::bigint[], ARRAY[1, -1], now()))
       OR NOT EXISTS (SELECT 1 FROM ctxgraph._retrieval_batch_problem('r', 'x', ARRAY[1]::bigint[], ARRAY['Infinity']::float8[], now()))
       OR NOT EXISTS (SELECT 1 FROM ctxgraph._retrieval_batch_problem('r', 'x', ARRAY[1]::bigint[], ARRAY[42], now())) THEN
        RAISE EXCEPTION 'verify: similarity scores outside [-1, 1] are not refused, or its ends are';
    END IF;
    SELECT * INTO p FROM ctxgraph._attempt_problem('r', 'x', 0, NULL, NULL);
    IF p.message IS DISTINCT FROM 'ctxgraph: attempt_number must be 1 or more, got 0' THEN
        RAISE EXCEPTION 'verify: attempt 0 gave %', p.message;
    END IF;
    SELECT * INTO p FROM ctxgraph._outcome_problem('stig', 'graded', false, 1, NULL);
    IF p.sqlstate IS DISTINCT FROM '22023' OR p.hint NOT LIKE 'known failure modes: %' THEN
        RAISE EXCEPTION 'verify: a graded failure without a mode gave %', p.sqlstate;
    END IF;
    IF EXISTS (SELECT 1 FROM ctxgraph._outcome_problem('cve', 'binary', false, 1, NULL)) THEN
        RAISE EXCEPTION 'verify: a binary failure without a mode was refused';
    END IF;
    BEGIN
        PERFORM ctxgraph._raise_problem('23503', 'ctxgraph: no stig tip with id 7', NULL, 12);
        RAISE EXCEPTION 'verify: _raise_problem did not raise';
    EXCEPTION WHEN foreign_key_violation THEN
        GET STACKED DIAGNOSTICS raised = MESSAGE_TEXT;
    END;
    IF raised IS DISTINCT FROM 'ctxgraph: run log line 12: no stig tip with id 7' THEN
        RAISE EXCEPTION 'verify: _raise_problem said %', raised;
    END IF;
END
$$;
