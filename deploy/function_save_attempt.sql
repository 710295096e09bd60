-- Deploy ctxgraph:function_save_attempt to pg
-- requires: function_save_attempt@v0.7.0
-- requires: table_group_roles

-- Rework: the grants go through ctxgraph._grant, which names the roles from ctxgraph.group_roles,
-- instead of spelling them; the same grants, the same definitions.
--
-- Rework: the argument checks come from ctxgraph._attempt_problem (the same checks, messages,
-- SQLSTATEs and order), which ctxgraph.ingest_run_log applies to every attempt line of a run log.
-- What is written is unchanged.
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph.save_attempt(
    skill          text,
    run_id         text,
    rule_id        text,
    attempt_number integer,
    approach       text DEFAULT NULL,
    started_at     timestamptz DEFAULT NULL,
    ended_at       timestamptz DEFAULT NULL
)
RETURNS bigint
LANGUAGE plpgsql
-- The owner's rights and a fixed search_path, as privileges_write_path set them: a CREATE OR
-- REPLACE sets every attribute of the function anew.
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    problem     record;
    new_id      bigint;
    existing_id bigint;
BEGIN
    PERFORM ctxgraph._require_skill(save_attempt.skill);
    SELECT * INTO problem FROM ctxgraph._attempt_problem(save_attempt.run_id, save_attempt.rule_id,
                                                         save_attempt.attempt_number, save_attempt.started_at,
                                                         save_attempt.ended_at);
    IF FOUND THEN
        PERFORM ctxgraph._raise_problem(problem.sqlstate, problem.message, problem.hint);
    END IF;

    INSERT INTO ctxgraph.runs (skill, id, started_at)
    VALUES (save_attempt.skill, save_attempt.run_id, coalesce(save_attempt.started_at, now()))
    ON CONFLICT DO NOTHING;

    INSERT INTO ctxgraph.attempts AS a (skill, run_id, rule_id, attempt_number, approach, started_at, ended_at)
    VALUES (save_attempt.skill, save_attempt.run_id, save_attempt.rule_id, save_attempt.attempt_number,
            save_attempt.approach, save_attempt.started_at, save_attempt.ended_at)
    ON CONFLICT ON CONSTRAINT attempts_run_rule_attempt_key DO NOTHING
    RETURNING a.id INTO new_id;

    IF new_id IS NULL THEN
        SELECT a.id INTO existing_id FROM ctxgraph.attempts AS a
         WHERE a.skill = save_attempt.skill AND a.run_id = save_attempt.run_id
           AND a.rule_id = save_attempt.rule_id AND a.attempt_number = save_attempt.attempt_number;
        RAISE EXCEPTION 'ctxgraph: attempt % of rule % in run % is already saved (id %)',
                        save_attempt.attempt_number, quote_literal(save_attempt.rule_id),
                        quote_literal(save_attempt.run_id), existing_id
            USING ERRCODE = 'unique_violation';
    END IF;
    RETURN new_id;
END
$$;

COMMENT ON FUNCTION ctxgraph.save_attempt(text, text, text, integer, text, timestamptz, timestamptz) IS
    'Saves one attempt (creating its run if missing) and returns attempts.id; a second save of the same run, rule and attempt number raises 23505.';

REVOKE ALL ON FUNCTION ctxgraph.save_attempt(text, text, text, integer, text, timestamptz, timestamptz) FROM PUBLIC;
DO $$ BEGIN PERFORM ctxgraph._grant(
    'EXECUTE ON FUNCTION ctxgraph.save_attempt(text, text, text, integer, text, timestamptz, timestamptz)',
    '{writer}'); END $$;

COMMIT;
