-- Deploy ctxgraph:function_wilson_bounds to pg
-- requires: function_wilson_bounds@v0.3.0

-- Rework that carries edits made in place after the release that first shipped this change
-- (bounds clipped to [0, 1] (float rounding stepped a hair outside)): a database deployed at @v0.1.0 or @v0.2.0 never ran them. The definitions are those
-- released at @v0.3.0, replaced in place, so every database ends with the same ones.

-- Wilson score bounds for a mean p of n observations in [0, 1]. For any variable bounded in
-- [0, 1] with mean p the variance is at most p(1 - p), so the Bernoulli interval is a
-- conservative interval for graded, follow-weighted utilities too. n may be fractional (an
-- effective count of follow-weighted attempts). NULL when n is 0 or NULL; p and the bounds are
-- clipped to [0, 1] (float rounding can otherwise step a hair outside).
BEGIN;


CREATE OR REPLACE FUNCTION ctxgraph.wilson_lower(p double precision, n double precision, z double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN n IS NULL OR n <= 0 OR p IS NULL OR z IS NULL THEN NULL
                ELSE greatest(0.0, (c + z * z / (2 * n) - z * sqrt(c * (1 - c) / n + z * z / (4 * n * n))) / (1 + z * z / n))
           END
      FROM (SELECT least(greatest(p, 0.0), 1.0) AS c) AS clipped
$$;

CREATE OR REPLACE FUNCTION ctxgraph.wilson_upper(p double precision, n double precision, z double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN n IS NULL OR n <= 0 OR p IS NULL OR z IS NULL THEN NULL
                ELSE least(1.0, (c + z * z / (2 * n) + z * sqrt(c * (1 - c) / n + z * z / (4 * n * n))) / (1 + z * z / n))
           END
      FROM (SELECT least(greatest(p, 0.0), 1.0) AS c) AS clipped
$$;

COMMENT ON FUNCTION ctxgraph.wilson_lower(double precision, double precision, double precision) IS
    'Wilson score lower bound of a mean p (clipped to [0, 1]) over n observations at normal quantile z; NULL for n <= 0.';
COMMENT ON FUNCTION ctxgraph.wilson_upper(double precision, double precision, double precision) IS
    'Wilson score upper bound of a mean p (clipped to [0, 1]) over n observations at normal quantile z; NULL for n <= 0.';

GRANT EXECUTE ON FUNCTION ctxgraph.wilson_lower(double precision, double precision, double precision),
    ctxgraph.wilson_upper(double precision, double precision, double precision)
    TO ctxgraph_writer, ctxgraph_scorer, ctxgraph_ranker, ctxgraph_analyst;

COMMIT;
