-- Deploy ctxgraph:function_follow_weight to pg
-- requires: function_follow_weight@v0.5.0

-- Rework: known_cosine without STRICT. The planner inlines a SQL function only when its body
-- keeps the function's strictness, and nullif is not strict, so the STRICT form ran as a function
-- call for every row of every scan that reads a cosine (scored_retrievals, the agreement and
-- overview views, the pair recomputations of the maintained levels). NULL in, NULL out either
-- way: the answers are the same for every input.
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph.known_cosine(emb double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT nullif(emb, 'NaN'::double precision) $$;

COMMENT ON FUNCTION ctxgraph.known_cosine(double precision) IS
    'The cosine the embedding leg stored, with NaN (a failed encoding) read as NULL: the one definition of NaN-as-NULL. Not STRICT, so the planner inlines it.';

COMMIT;
