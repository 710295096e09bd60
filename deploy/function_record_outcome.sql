-- Deploy ctxgraph:function_record_outcome to pg
-- requires: function_record_outcome@v0.7.0
-- requires: table_group_roles

-- Rework: the grants go through ctxgraph._grant, which names the roles from ctxgraph.group_roles,
-- instead of spelling them; the same grants, the same definitions.
--
-- Rework: correcting the result of a scored attempt takes the attempt's log rows before the
-- attempts trigger takes their tips, the order a write-back of those rows takes them in. Records
-- the evaluator's verdict on an attempt and fills outcome_value (DEF-26) and outcome_confidence for
-- exactly that attempt's retrievals.
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph.record_outcome(
    skill        text,
    attempt_id   bigint,
    passed       boolean,
    failure_mode text DEFAULT NULL,
    ended_at     timestamptz DEFAULT NULL
)
RETURNS integer
LANGUAGE plpgsql
-- The owner's rights and a fixed search_path, as privileges_write_path set them: a CREATE OR
-- REPLACE sets every attribute of the function anew.
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    target  ctxgraph.attempts%ROWTYPE;
    outcome double precision;
    updated integer;
BEGIN
    PERFORM ctxgraph._require_skill(record_outcome.skill);
    IF record_outcome.attempt_id IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: attempt_id must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT * INTO target FROM ctxgraph.attempts AS a
     WHERE a.skill = record_outcome.skill AND a.id = record_outcome.attempt_id
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ctxgraph: no % attempt with id %', record_outcome.skill, record_outcome.attempt_id
            USING ERRCODE = 'no_data_found';
    END IF;
    IF NOT isfinite(record_outcome.ended_at) THEN
        RAISE EXCEPTION 'ctxgraph: ended_at must be a finite instant, got %', record_outcome.ended_at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF record_outcome.ended_at < target.started_at THEN
        RAISE EXCEPTION 'ctxgraph: attempt ends (%) before it starts (%)', record_outcome.ended_at, target.started_at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Validates passed and failure_mode before anything is written.
    outcome := ctxgraph.graded_outcome(record_outcome.skill, record_outcome.passed, target.attempt_number,
                                       record_outcome.failure_mode);

    -- A correction of a scored attempt moves its pairs twice: the attempts trigger (a new failure
    -- mode) locks the tips, and the UPDATE of the rows below locks the rows. A write-back of those
    -- rows locks the rows, then the tips: taken in that order here too, by locking the rows first,
    -- the two wait for each other instead of deadlocking. (A first result has no scored row: the
    -- attempts trigger locks nothing, and the rows are locked by their UPDATE, as before.)
    PERFORM 1 FROM ctxgraph.tip_retrievals AS r
     WHERE r.skill = record_outcome.skill AND r.attempt_id = target.id
       AND EXISTS (SELECT 1 FROM ctxgraph.tip_retrievals AS s
                    WHERE s.skill = record_outcome.skill AND s.attempt_id = target.id AND s.outcome_value IS NOT NULL)
     ORDER BY r.id
       FOR NO KEY UPDATE;

    UPDATE ctxgraph.attempts AS a
       SET passed = record_outcome.passed,
           failure_mode = record_outcome.failure_mode,
           ended_at = coalesce(record_outcome.ended_at, a.ended_at)
     WHERE a.skill = record_outcome.skill AND a.id = target.id;

    UPDATE ctxgraph.tip_retrievals AS r
       SET outcome_value = outcome,
           outcome_confidence = ctxgraph.param('outcome.confidence')
     WHERE r.skill = record_outcome.skill AND r.attempt_id = target.id;
    GET DIAGNOSTICS updated = ROW_COUNT;
    RETURN updated;
END
$$;

COMMENT ON FUNCTION ctxgraph.record_outcome(text, bigint, boolean, text, timestamptz) IS
    'Records an attempt''s result (and its end, when given) and fills outcome_value (ctxgraph.graded_outcome) and outcome_confidence on exactly its linked retrievals; returns how many. Recording again corrects the earlier result.';

REVOKE ALL ON FUNCTION ctxgraph.record_outcome(text, bigint, boolean, text, timestamptz) FROM PUBLIC;
DO $$ BEGIN PERFORM ctxgraph._grant(
    'EXECUTE ON FUNCTION ctxgraph.record_outcome(text, bigint, boolean, text, timestamptz)',
    '{writer}'); END $$;

COMMIT;
