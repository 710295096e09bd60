-- Revert ctxgraph:function_follow_weight from pg

-- Back to known_cosine as released at @v0.5.0: STRICT, with its comment.
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph.known_cosine(emb double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT nullif(emb, 'NaN'::double precision) $$;

COMMENT ON FUNCTION ctxgraph.known_cosine(double precision) IS
    'The cosine the embedding leg stored, with NaN (a failed encoding) read as NULL: the one definition of NaN-as-NULL.';

COMMIT;
