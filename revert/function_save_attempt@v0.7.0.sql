-- Revert ctxgraph:function_save_attempt from pg

-- Back to the definition released at @v0.5.0, its checks written inline.

-- The ADR's auxiliary fix, part 1: saving an attempt returns its id, so the retrievals logged
-- before it can be linked to it (ctxgraph.update_retrieval_attempt_ids).
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
AS $$
#variable_conflict use_column
DECLARE
    new_id      bigint;
    existing_id bigint;
BEGIN
    PERFORM ctxgraph._require_skill(save_attempt.skill);
    IF save_attempt.run_id IS NULL OR save_attempt.rule_id IS NULL OR save_attempt.attempt_number IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: save_attempt needs run_id, rule_id and attempt_number'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF btrim(save_attempt.run_id) = '' OR btrim(save_attempt.rule_id) = '' THEN
        RAISE EXCEPTION 'ctxgraph: run_id and rule_id must not be empty' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF save_attempt.attempt_number < 1 THEN
        RAISE EXCEPTION 'ctxgraph: attempt_number must be 1 or more, got %', save_attempt.attempt_number
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    IF save_attempt.ended_at < save_attempt.started_at THEN
        RAISE EXCEPTION 'ctxgraph: attempt ends (%) before it starts (%)', save_attempt.ended_at, save_attempt.started_at
            USING ERRCODE = 'invalid_parameter_value';
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
GRANT EXECUTE ON FUNCTION ctxgraph.save_attempt(text, text, text, integer, text, timestamptz, timestamptz) TO ctxgraph_writer;

COMMIT;
