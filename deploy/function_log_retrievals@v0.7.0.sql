-- Deploy ctxgraph:function_log_retrievals to pg
-- requires: function_log_retrievals@v0.5.0
-- requires: function_write_checks

-- Rework: the batch's checks come from ctxgraph._retrieval_batch_problem and ctxgraph._missing_tips
-- (the same checks, messages, SQLSTATEs and order), which ctxgraph.ingest_run_log applies to every
-- retrieval line of a run log. What is written is unchanged.
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph.log_retrievals(
    skill             text,
    run_id            text,
    rule_id           text,
    tip_ids           bigint[],
    similarity_scores double precision[],
    retrieved_at      timestamptz DEFAULT now()
)
RETURNS SETOF bigint
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    problem record;
    missing bigint[];
BEGIN
    PERFORM ctxgraph._require_skill(log_retrievals.skill);
    SELECT * INTO problem FROM ctxgraph._retrieval_batch_problem(log_retrievals.run_id, log_retrievals.rule_id,
                                                                 log_retrievals.tip_ids, log_retrievals.similarity_scores,
                                                                 log_retrievals.retrieved_at);
    IF FOUND THEN
        PERFORM ctxgraph._raise_problem(problem.sqlstate, problem.message, problem.hint);
    END IF;
    SELECT array_agg(m ORDER BY m) INTO missing FROM ctxgraph._missing_tips(log_retrievals.skill, log_retrievals.tip_ids) AS m;
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'ctxgraph: no % tip with id %', log_retrievals.skill, array_to_string(missing, ', ')
            USING ERRCODE = 'foreign_key_violation';
    END IF;

    IF cardinality(log_retrievals.tip_ids) = 0 THEN
        RETURN;  -- nothing was retrieved: nothing to log, not even the run
    END IF;

    INSERT INTO ctxgraph.runs (skill, id, started_at)
    VALUES (log_retrievals.skill, log_retrievals.run_id, log_retrievals.retrieved_at)
    ON CONFLICT DO NOTHING;

    RETURN QUERY
    WITH inserted AS (
        INSERT INTO ctxgraph.tip_retrievals AS r (skill, run_id, tip_id, rule_id, rank, similarity_score, retrieved_at)
        SELECT log_retrievals.skill, log_retrievals.run_id, u.tip_id, log_retrievals.rule_id, u.rank::integer,
               u.similarity_score, log_retrievals.retrieved_at
          FROM unnest(log_retrievals.tip_ids, log_retrievals.similarity_scores)
               WITH ORDINALITY AS u (tip_id, similarity_score, rank)
        RETURNING r.id, r.rank
    )
    SELECT inserted.id FROM inserted ORDER BY inserted.rank;
END
$$;

COMMENT ON FUNCTION ctxgraph.log_retrievals(text, text, text, bigint[], double precision[], timestamptz) IS
    'Logs the tips of one Worker prompt (rank = array position, run created if missing) and returns their retrieval ids in rank order; mismatched arrays raise 22023, unknown tips 23503.';

REVOKE ALL ON FUNCTION ctxgraph.log_retrievals(text, text, text, bigint[], double precision[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ctxgraph.log_retrievals(text, text, text, bigint[], double precision[], timestamptz) TO ctxgraph_writer;

COMMIT;
