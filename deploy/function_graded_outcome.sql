-- Deploy ctxgraph:function_graded_outcome to pg
-- requires: function_graded_outcome@v0.7.0
-- requires: table_group_roles

-- Rework: the grants go through ctxgraph._grant, which names the roles from ctxgraph.group_roles,
-- instead of spelling them; the same grants, the same definitions.
--
-- Rework: graded_outcome's checks move to ctxgraph._outcome_problem (the same checks, messages and
-- SQLSTATEs, in the same order), which the bulk ingest applies to every attempt line of a run log.
-- The values are unchanged. _require_skill stays as the earlier instance made it.
BEGIN;

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
    problem   record;
    parameter text;
BEGIN
    SELECT * INTO problem FROM ctxgraph._outcome_problem(graded_outcome.skill, grading, graded_outcome.passed,
                                                         graded_outcome.attempt_number, graded_outcome.failure_mode);
    IF FOUND THEN
        PERFORM ctxgraph._raise_problem(problem.sqlstate, problem.message, problem.hint);
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

    SELECT fm.outcome_parameter INTO parameter FROM ctxgraph.failure_modes AS fm WHERE fm.name = graded_outcome.failure_mode;
    RETURN ctxgraph.param(parameter);
END
$$;

COMMENT ON FUNCTION ctxgraph.graded_outcome(text, boolean, integer, text) IS
    'DEF-26 outcome of an attempt: graded skills 1.0 / 0.8 / 0.5 by pass attempt, 0.0 clean or evaluator-gap failure, -0.2 health failure; binary skills 1.0 / 0.0. Raises 22004 on NULL and 22023 on unknown skill, unknown failure mode or attempt_number < 1.';

REVOKE ALL ON FUNCTION ctxgraph.graded_outcome(text, boolean, integer, text) FROM PUBLIC;
DO $$ BEGIN PERFORM ctxgraph._grant(
    'EXECUTE ON FUNCTION ctxgraph.graded_outcome(text, boolean, integer, text)',
    '{writer,scorer,ranker,analyst}'); END $$;

COMMIT;
