-- Deploy ctxgraph:function_update_retrieval_attempt_ids to pg
-- requires: function_update_retrieval_attempt_ids@v0.7.0
-- requires: table_group_roles

-- Rework: the grants go through ctxgraph._grant, which names the roles from ctxgraph.group_roles,
-- instead of spelling them; the same grants, the same definitions.
--
-- Rework: a cost that stays constant as the log grows. The rows named are read once, each by its
-- primary key, and every check reads that one fetch; the UPDATE names the rows to change by
-- primary key too. The released version queried the log once per check and let the UPDATE filter
-- on attempt_id IS NULL, which the planner could answer from the attempt index's NULL entries: in
-- a transaction that loads a run, every row it has linked leaves one there, so each link read all
-- of them. Same checks, errors and answer.
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph.update_retrieval_attempt_ids(
    skill         text,
    retrieval_ids bigint[],
    attempt_id    bigint
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
    missing bigint[];
    foreign_rows bigint[];
    linked_elsewhere bigint[];
    to_change bigint[];
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
    IF target.passed IS NOT NULL THEN
        outcome := ctxgraph.graded_outcome(target.skill, target.passed, target.attempt_number, target.failure_mode);
    END IF;

    -- Each id passed in is read once, by primary key, and locked, so the checks below still hold
    -- when the UPDATE runs; every check reads this one fetch, never the log again. The LIMIT 1 (the
    -- key is unique) keeps each lookup a primary-key probe: a condition on attempt_id would let the
    -- planner combine it with the attempt index, whose NULL entries a loading transaction fills
    -- with entries of rows it has since linked (dead to no snapshot yet, so never cleaned).
    SELECT array_agg(i.id ORDER BY i.id) FILTER (WHERE r.id IS NULL),
           array_agg(r.id ORDER BY r.id) FILTER (WHERE r.run_id <> target.run_id OR r.rule_id <> target.rule_id),
           array_agg(r.id ORDER BY r.id) FILTER (WHERE r.attempt_id IS NOT NULL AND r.attempt_id <> target.id),
           array_agg(r.id ORDER BY r.id) FILTER (WHERE r.attempt_id IS NULL
                                                    OR (target.passed IS NOT NULL AND r.outcome_value IS DISTINCT FROM outcome))
      INTO missing, foreign_rows, linked_elsewhere, to_change
      FROM (SELECT DISTINCT u.id FROM unnest(update_retrieval_attempt_ids.retrieval_ids) AS u (id)) AS i
      LEFT JOIN LATERAL (
            SELECT r.id, r.run_id, r.rule_id, r.attempt_id, r.outcome_value
              FROM ctxgraph.tip_retrievals AS r
             WHERE r.skill = update_retrieval_attempt_ids.skill AND r.id = i.id
             LIMIT 1
               FOR UPDATE) AS r ON true;

    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'ctxgraph: no % retrieval with id %', update_retrieval_attempt_ids.skill, array_to_string(missing, ', ')
            USING ERRCODE = 'no_data_found';
    END IF;
    IF foreign_rows IS NOT NULL THEN
        RAISE EXCEPTION 'ctxgraph: retrievals % are not of run % and rule % like attempt %',
                        array_to_string(foreign_rows, ', '), quote_literal(target.run_id),
                        quote_literal(target.rule_id), target.id
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF linked_elsewhere IS NOT NULL THEN
        RAISE EXCEPTION 'ctxgraph: retrievals % are already linked to another attempt', array_to_string(linked_elsewhere, ', ')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF to_change IS NULL THEN
        RETURN 0;  -- linked already, with the outcome in force: nothing to write
    END IF;

    UPDATE ctxgraph.tip_retrievals AS r
       SET attempt_id = target.id,
           outcome_value = CASE WHEN target.passed IS NULL THEN r.outcome_value ELSE outcome END,
           outcome_confidence = CASE WHEN target.passed IS NULL THEN r.outcome_confidence
                                     ELSE ctxgraph.param('outcome.confidence') END
     WHERE r.skill = update_retrieval_attempt_ids.skill AND r.id = ANY (to_change);
    GET DIAGNOSTICS updated = ROW_COUNT;
    RETURN updated;
END
$$;

COMMENT ON FUNCTION ctxgraph.update_retrieval_attempt_ids(text, bigint[], bigint) IS
    'Links retrievals to the attempt whose prompt carried them (all must be of its run and rule) and returns the rows changed; linking again is a no-op, another attempt''s rows raise 22023, unknown ids P0002.';

REVOKE ALL ON FUNCTION ctxgraph.update_retrieval_attempt_ids(text, bigint[], bigint) FROM PUBLIC;
DO $$ BEGIN PERFORM ctxgraph._grant(
    'EXECUTE ON FUNCTION ctxgraph.update_retrieval_attempt_ids(text, bigint[], bigint)',
    '{writer}'); END $$;

COMMIT;
