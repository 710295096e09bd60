-- Revert ctxgraph:function_graded_outcome from pg

-- Back to the definitions released at @v0.5.0 (checks written inline); _require_skill is unchanged.

-- ADR-0019 DEF-26: the graded outcome of one attempt. Values come from ctxgraph.parameters.
-- Errors (documented in the README):
--   22004 null_value_not_allowed   skill, passed or attempt_number is NULL
--   22023 invalid_parameter_value  unknown skill, unknown failure mode, attempt_number < 1,
--                                  a passed attempt with a failure mode, a graded failure without one
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph._require_skill(skill text)
RETURNS text
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_column
DECLARE
    grading text;
BEGIN
    IF _require_skill.skill IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: skill must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT s.grading INTO grading FROM ctxgraph.skills AS s WHERE s.name = _require_skill.skill;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ctxgraph: unknown skill %', quote_literal(_require_skill.skill)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'registered skills: ' || coalesce((SELECT string_agg(s.name, ', ' ORDER BY s.name) FROM ctxgraph.skills AS s), 'none');
    END IF;
    RETURN grading;
END
$$;

COMMENT ON FUNCTION ctxgraph._require_skill(text) IS
    'Private: the grading of a registered skill; raises 22004 for NULL and 22023 for an unknown skill.';

CREATE OR REPLACE FUNCTION ctxgraph.graded_outcome(
    skill          text,
    passed         boolean,
    attempt_number integer,
    failure_mode   text DEFAULT NULL
)
RETURNS double precision
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_column
DECLARE
    grading   text := ctxgraph._require_skill(graded_outcome.skill);
    parameter text;
BEGIN
    IF graded_outcome.passed IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: passed must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF graded_outcome.attempt_number IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: attempt_number must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF graded_outcome.attempt_number < 1 THEN
        RAISE EXCEPTION 'ctxgraph: attempt_number must be 1 or more, got %', graded_outcome.attempt_number
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF graded_outcome.failure_mode IS NOT NULL THEN
        SELECT fm.outcome_parameter INTO parameter
          FROM ctxgraph.failure_modes AS fm WHERE fm.name = graded_outcome.failure_mode;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'ctxgraph: unknown failure mode %', quote_literal(graded_outcome.failure_mode)
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'known failure modes: ' || (SELECT string_agg(fm.name, ', ' ORDER BY fm.name) FROM ctxgraph.failure_modes AS fm);
        END IF;
        IF graded_outcome.passed THEN
            RAISE EXCEPTION 'ctxgraph: a passed attempt has no failure mode, got %', quote_literal(graded_outcome.failure_mode)
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;

    IF grading = 'binary' THEN
        RETURN ctxgraph.param(CASE WHEN graded_outcome.passed THEN 'outcome.binary.pass' ELSE 'outcome.binary.fail' END);
    END IF;

    IF graded_outcome.passed THEN
        IF graded_outcome.attempt_number = 1 THEN
            RETURN ctxgraph.param('outcome.pass.first_attempt');
        ELSIF graded_outcome.attempt_number <= ctxgraph.param('outcome.pass.early_last_attempt') THEN
            RETURN ctxgraph.param('outcome.pass.early');
        END IF;
        RETURN ctxgraph.param('outcome.pass.late');
    END IF;

    IF parameter IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: a failed attempt of graded skill % needs a failure mode', quote_literal(graded_outcome.skill)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'known failure modes: ' || (SELECT string_agg(fm.name, ', ' ORDER BY fm.name) FROM ctxgraph.failure_modes AS fm);
    END IF;
    RETURN ctxgraph.param(parameter);
END
$$;

COMMENT ON FUNCTION ctxgraph.graded_outcome(text, boolean, integer, text) IS
    'DEF-26 outcome of an attempt: graded skills 1.0 / 0.8 / 0.5 by pass attempt, 0.0 clean or evaluator-gap failure, -0.2 health failure; binary skills 1.0 / 0.0. Raises 22004 on NULL and 22023 on unknown skill, unknown failure mode or attempt_number < 1.';

GRANT EXECUTE ON FUNCTION ctxgraph.graded_outcome(text, boolean, integer, text)
    TO ctxgraph_writer, ctxgraph_scorer, ctxgraph_ranker, ctxgraph_analyst;
GRANT EXECUTE ON FUNCTION ctxgraph._require_skill(text)
    TO ctxgraph_writer, ctxgraph_scorer, ctxgraph_ranker, ctxgraph_analyst;

COMMIT;
