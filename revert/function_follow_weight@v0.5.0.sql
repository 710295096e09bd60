-- Revert ctxgraph:function_follow_weight from pg

-- Back to the rule as released at @v0.4.0: the 3-input follow_decision and follow_verdict with
-- their own bodies and comments, then drop what the rework added.
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph.follow_decision(llm boolean, emb double precision, emb_threshold double precision)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
               WHEN llm THEN 'judge_followed'
               WHEN NOT llm THEN 'judge_ignored'
               WHEN ctxgraph.known_cosine(emb) IS NULL THEN 'unscored'
               WHEN ctxgraph.known_cosine(emb) >= emb_threshold THEN 'emb_followed'
               ELSE 'emb_ignored'
           END
$$;

COMMENT ON FUNCTION ctxgraph.follow_decision(boolean, double precision, double precision) IS
    'Which branch of the DEF-27 follow rule a retrieval takes: judge_followed, judge_ignored (the judge''s verdict wins), emb_followed / emb_ignored (cosine against the threshold when the judge is silent), unscored (neither signal). follow.weight.<branch> is its coefficient.';

CREATE OR REPLACE FUNCTION ctxgraph.follow_verdict(decision text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE decision
               WHEN 'judge_followed' THEN true
               WHEN 'emb_followed' THEN true
               WHEN 'judge_ignored' THEN false
               WHEN 'emb_ignored' THEN false
           END
$$;

DROP FUNCTION ctxgraph.follow_weight(boolean, double precision, double precision);
DROP FUNCTION ctxgraph.tip_followed(boolean, double precision, double precision);
DROP FUNCTION ctxgraph.follow_decision(boolean, double precision, double precision, double precision, double precision);

DELETE FROM ctxgraph.parameters
 WHERE name IN ('follow.probability_threshold', 'follow.weight.signal_followed', 'follow.weight.signal_ignored');

COMMIT;
