-- Deploy ctxgraph:view_follow_agreement to pg
-- requires: view_follow_agreement@v0.5.0

-- Rework: cohen_kappa as one expression. The released body (a subquery and a UNION ALL) cannot be
-- inlined, so the threshold sweep of follow_agreement ran it as a function call twice per judged
-- retrieval: 18 us a call, most of the view's time (700 ms on a 49,480-row log, 170 ms inlined).
-- The arithmetic is the released one, in the same order (the same bits): n, the observed and the
-- expected agreement; NULL when there is nothing to rate or the expected agreement is 1.
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph.cohen_kappa(both_yes bigint, first_only bigint, second_only bigint, both_no bigint)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
               WHEN both_yes + first_only + second_only + both_no = 0 THEN NULL
               WHEN ((both_yes + first_only) * (both_yes + second_only) + (second_only + both_no) * (first_only + both_no))
                    / ((both_yes + first_only + second_only + both_no)::double precision
                       * (both_yes + first_only + second_only + both_no)::double precision) >= 1 THEN NULL
               ELSE ((both_yes + both_no) / (both_yes + first_only + second_only + both_no)::double precision
                     - ((both_yes + first_only) * (both_yes + second_only) + (second_only + both_no) * (first_only + both_no))
                       / ((both_yes + first_only + second_only + both_no)::double precision
                          * (both_yes + first_only + second_only + both_no)::double precision))
                    / (1 - ((both_yes + first_only) * (both_yes + second_only) + (second_only + both_no) * (first_only + both_no))
                           / ((both_yes + first_only + second_only + both_no)::double precision
                              * (both_yes + first_only + second_only + both_no)::double precision))
           END
$$;

COMMENT ON FUNCTION ctxgraph.cohen_kappa(bigint, bigint, bigint, bigint) IS
    'Cohen''s kappa of two yes/no raters from their 2x2 confusion counts; NULL when undefined. One expression, so the planner inlines it.';

COMMIT;
