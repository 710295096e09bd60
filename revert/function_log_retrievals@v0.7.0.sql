-- Revert ctxgraph:function_log_retrievals from pg

-- Back to the definition released at @v0.5.0, its checks written inline.

-- Logs one retrieval batch (the tips put into one Worker prompt) in a single statement; rank is
-- the position in the array. Bad input raises before anything is written.
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
    missing bigint[];
BEGIN
    PERFORM ctxgraph._require_skill(log_retrievals.skill);
    IF log_retrievals.run_id IS NULL OR log_retrievals.rule_id IS NULL OR log_retrievals.tip_ids IS NULL
       OR log_retrievals.similarity_scores IS NULL OR log_retrievals.retrieved_at IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: log_retrievals needs run_id, rule_id, tip_ids, similarity_scores and retrieved_at'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF btrim(log_retrievals.run_id) = '' OR btrim(log_retrievals.rule_id) = '' THEN
        RAISE EXCEPTION 'ctxgraph: run_id and rule_id must not be empty' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF coalesce(array_ndims(log_retrievals.tip_ids), 1) <> 1 OR coalesce(array_ndims(log_retrievals.similarity_scores), 1) <> 1 THEN
        RAISE EXCEPTION 'ctxgraph: tip_ids and similarity_scores must be one-dimensional arrays'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(log_retrievals.tip_ids) <> cardinality(log_retrievals.similarity_scores) THEN
        RAISE EXCEPTION 'ctxgraph: % tip ids but % similarity scores', cardinality(log_retrievals.tip_ids),
                        cardinality(log_retrievals.similarity_scores)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'similarity_scores[i] is the score of tip_ids[i]; pass NULL elements for unknown scores.';
    END IF;
    IF array_position(log_retrievals.tip_ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ctxgraph: tip_ids must not contain NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF array_position(log_retrievals.similarity_scores, 'NaN'::double precision) IS NOT NULL THEN
        RAISE EXCEPTION 'ctxgraph: similarity_scores must not contain NaN' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(log_retrievals.tip_ids) <> (SELECT count(DISTINCT t) FROM unnest(log_retrievals.tip_ids) AS t) THEN
        RAISE EXCEPTION 'ctxgraph: a tip appears twice in one retrieval batch' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT array_agg(t ORDER BY t) INTO missing
      FROM unnest(log_retrievals.tip_ids) AS t
     WHERE NOT EXISTS (SELECT 1 FROM ctxgraph.tips AS tip WHERE tip.skill = log_retrievals.skill AND tip.id = t);
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
