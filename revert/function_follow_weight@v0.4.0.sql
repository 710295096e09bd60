-- Revert ctxgraph:function_follow_weight from pg

-- Back to the bodies released at @v0.3.0 (inline parameter subselects), then drop the two
-- functions the rework added.
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph.tip_followed(llm boolean, emb double precision)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT CASE
               WHEN llm IS NOT NULL THEN llm
               WHEN emb IS NULL OR emb = 'NaN'::double precision THEN NULL
               ELSE emb >= (SELECT p.value FROM ctxgraph.parameters AS p WHERE p.name = 'follow.emb_threshold')
           END
$$;

CREATE OR REPLACE FUNCTION ctxgraph.follow_weight(llm boolean, emb double precision)
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

DROP FUNCTION ctxgraph.follow_verdict(text);
DROP FUNCTION ctxgraph.follow_decision(boolean, double precision, double precision);
DROP FUNCTION ctxgraph.known_cosine(double precision);

COMMIT;
