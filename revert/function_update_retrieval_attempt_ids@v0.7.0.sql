-- Revert ctxgraph:function_update_retrieval_attempt_ids from pg

-- Back to the definition released at @v0.5.0: its checks read the log once per check.

-- The ADR's auxiliary fix, part 2: retrievals are logged before their attempt row exists, so
-- they are linked afterwards, in one batch. If the attempt's outcome is already recorded, the
-- linked rows receive it too, so the order of link and record_outcome does not matter.
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph.update_retrieval_attempt_ids(
    skill         text,
    retrieval_ids bigint[],
    attempt_id    bigint
)
RETURNS integer
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    target  ctxgraph.attempts%ROWTYPE;
    missing bigint[];
    foreign_rows bigint[];
    linked_elsewhere bigint[];
    outcome double precision;
    updated integer;
BEGIN
    PERFORM ctxgraph._require_skill(update_retrieval_attempt_ids.skill);
    IF update_retrieval_attempt_ids.retrieval_ids IS NULL OR update_retrieval_attempt_ids.attempt_id IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: update_retrieval_attempt_ids needs retrieval_ids and attempt_id'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF array_position(update_retrieval_attempt_ids.retrieval_ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ctxgraph: retrieval_ids must not contain NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;

    SELECT * INTO target FROM ctxgraph.attempts AS a
     WHERE a.skill = update_retrieval_attempt_ids.skill AND a.id = update_retrieval_attempt_ids.attempt_id
       FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ctxgraph: no % attempt with id %', update_retrieval_attempt_ids.skill, update_retrieval_attempt_ids.attempt_id
            USING ERRCODE = 'no_data_found';
    END IF;

    -- Lock the rows first so the checks below still hold when the UPDATE runs.
    PERFORM 1 FROM ctxgraph.tip_retrievals AS r
     WHERE r.skill = update_retrieval_attempt_ids.skill AND r.id = ANY (update_retrieval_attempt_ids.retrieval_ids)
       FOR UPDATE;

    SELECT array_agg(DISTINCT i ORDER BY i) INTO missing
      FROM unnest(update_retrieval_attempt_ids.retrieval_ids) AS i
     WHERE NOT EXISTS (SELECT 1 FROM ctxgraph.tip_retrievals AS r
                        WHERE r.skill = update_retrieval_attempt_ids.skill AND r.id = i);
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'ctxgraph: no % retrieval with id %', update_retrieval_attempt_ids.skill, array_to_string(missing, ', ')
            USING ERRCODE = 'no_data_found';
    END IF;

    SELECT array_agg(r.id ORDER BY r.id) INTO foreign_rows
      FROM ctxgraph.tip_retrievals AS r
     WHERE r.skill = update_retrieval_attempt_ids.skill AND r.id = ANY (update_retrieval_attempt_ids.retrieval_ids)
       AND (r.run_id <> target.run_id OR r.rule_id <> target.rule_id);
    IF foreign_rows IS NOT NULL THEN
        RAISE EXCEPTION 'ctxgraph: retrievals % are not of run % and rule % like attempt %',
                        array_to_string(foreign_rows, ', '), quote_literal(target.run_id),
                        quote_literal(target.rule_id), target.id
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    SELECT array_agg(r.id ORDER BY r.id) INTO linked_elsewhere
      FROM ctxgraph.tip_retrievals AS r
     WHERE r.skill = update_retrieval_attempt_ids.skill AND r.id = ANY (update_retrieval_attempt_ids.retrieval_ids)
       AND r.attempt_id IS NOT NULL AND r.attempt_id <> target.id;
    IF linked_elsewhere IS NOT NULL THEN
        RAISE EXCEPTION 'ctxgraph: retrievals % are already linked to another attempt', array_to_string(linked_elsewhere, ', ')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    IF target.passed IS NOT NULL THEN
        outcome := ctxgraph.graded_outcome(target.skill, target.passed, target.attempt_number, target.failure_mode);
    END IF;

    UPDATE ctxgraph.tip_retrievals AS r
       SET attempt_id = target.id,
           outcome_value = CASE WHEN target.passed IS NULL THEN r.outcome_value ELSE outcome END,
           outcome_confidence = CASE WHEN target.passed IS NULL THEN r.outcome_confidence
                                     ELSE ctxgraph.param('outcome.confidence') END
     WHERE r.skill = update_retrieval_attempt_ids.skill AND r.id = ANY (update_retrieval_attempt_ids.retrieval_ids)
       AND (r.attempt_id IS NULL
            OR (target.passed IS NOT NULL AND r.outcome_value IS DISTINCT FROM outcome));
    GET DIAGNOSTICS updated = ROW_COUNT;
    RETURN updated;
END
$$;

COMMENT ON FUNCTION ctxgraph.update_retrieval_attempt_ids(text, bigint[], bigint) IS
    'Links retrievals to the attempt whose prompt carried them (all must be of its run and rule) and returns the rows changed; linking again is a no-op, another attempt''s rows raise 22023, unknown ids P0002.';

REVOKE ALL ON FUNCTION ctxgraph.update_retrieval_attempt_ids(text, bigint[], bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ctxgraph.update_retrieval_attempt_ids(text, bigint[], bigint) TO ctxgraph_writer;

COMMIT;
