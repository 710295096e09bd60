-- Revert ctxgraph:view_follow_agreement from pg

-- Back to cohen_kappa as released (view_follow_agreement@v0.3.0): the subquery form.
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph.cohen_kappa(both_yes bigint, first_only bigint, second_only bigint, both_no bigint)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN n = 0 OR expected >= 1 THEN NULL ELSE (observed - expected) / (1 - expected) END
      FROM (SELECT n,
                   (both_yes + both_no) / n AS observed,
                   ((both_yes + first_only) * (both_yes + second_only)
                    + (second_only + both_no) * (first_only + both_no)) / (n * n) AS expected
              FROM (SELECT (both_yes + first_only + second_only + both_no)::double precision AS n) AS total
             WHERE n > 0) AS k
    UNION ALL
    SELECT NULL WHERE both_yes + first_only + second_only + both_no = 0
$$;

COMMENT ON FUNCTION ctxgraph.cohen_kappa(bigint, bigint, bigint, bigint) IS
    'Cohen''s kappa of two yes/no raters from their 2x2 confusion counts; NULL when undefined.';

COMMIT;
