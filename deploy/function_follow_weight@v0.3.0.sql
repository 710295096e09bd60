-- Deploy ctxgraph:function_follow_weight to pg
-- requires: def27_tip_followed
-- requires: table_parameters

-- ADR-0019's follow CASE, written once. Every view, the aggregates and eviction call these two
-- functions; the coefficients are rows of ctxgraph.parameters (the ADR's 1.0 / 0.0 / 0.5 are
-- first-pass guesses, and its successor found 0.0 for "judged not followed" too punitive).
BEGIN;

INSERT INTO ctxgraph.parameters (name, value, description) VALUES
    ('follow.weight.judge_followed', 1.0, 'DEF-27 follow weight when the LLM judge says the script followed the tip.'),
    ('follow.weight.judge_ignored',  0.0, 'DEF-27 follow weight when the LLM judge says the script did not follow the tip (even on success).'),
    ('follow.weight.emb_followed',   1.0, 'Follow weight with no judge verdict and a cosine at or above follow.emb_threshold.'),
    ('follow.weight.emb_ignored',    0.0, 'Follow weight with no judge verdict and a cosine below follow.emb_threshold.'),
    ('follow.weight.unscored',       0.5, 'Follow weight with neither signal (pre-DEF-27 rows, failed scoring): conservative, keeps old order.'),
    ('follow.emb_threshold',         0.6, 'Cosine at or above which the embedding leg counts a tip as followed when the judge is silent.');

-- followed: the follow verdict as a boolean: the judge's if it has one, else the cosine against
-- the threshold, else NULL. NaN counts as NULL.
CREATE FUNCTION ctxgraph.tip_followed(llm boolean, emb double precision)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT CASE
               WHEN llm IS NOT NULL THEN llm
               WHEN emb IS NULL OR emb = 'NaN'::double precision THEN NULL
               ELSE emb >= (SELECT p.value FROM ctxgraph.parameters AS p WHERE p.name = 'follow.emb_threshold')
           END
$$;

COMMENT ON FUNCTION ctxgraph.tip_followed(boolean, double precision) IS
    'Whether a retrieval counts as followed: the judge''s verdict, else cosine >= follow.emb_threshold, else NULL (NaN is NULL).';

CREATE FUNCTION ctxgraph.follow_weight(llm boolean, emb double precision)
RETURNS double precision
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT p.value
      FROM ctxgraph.parameters AS p
     WHERE p.name = CASE
                        WHEN llm THEN 'follow.weight.judge_followed'
                        WHEN NOT llm THEN 'follow.weight.judge_ignored'
                        WHEN emb IS NULL OR emb = 'NaN'::double precision THEN 'follow.weight.unscored'
                        WHEN emb >= (SELECT t.value FROM ctxgraph.parameters AS t WHERE t.name = 'follow.emb_threshold')
                            THEN 'follow.weight.emb_followed'
                        ELSE 'follow.weight.emb_ignored'
                    END
$$;

COMMENT ON FUNCTION ctxgraph.follow_weight(boolean, double precision) IS
    'DEF-27 follow weight of a retrieval: judge true 1.0, judge false 0.0, else cosine >= threshold 1.0, cosine below 0.0, neither 0.5 (values from ctxgraph.parameters; NaN is NULL).';

GRANT EXECUTE ON FUNCTION ctxgraph.tip_followed(boolean, double precision), ctxgraph.follow_weight(boolean, double precision)
    TO ctxgraph_writer, ctxgraph_scorer, ctxgraph_ranker, ctxgraph_analyst;

COMMIT;
