-- Deploy ctxgraph:function_follow_weight to pg
-- requires: function_follow_weight@v0.3.0
-- requires: table_group_roles

-- Rework: the follow rule in one place. Released, the threshold decision was written in both
-- functions and in several views, NaN-as-NULL in six files, and the coefficients were read with
-- inline subselects that answered a silent NULL (or 0) when a parameter row was missing. Now:
--   known_cosine(emb)                  NaN (the ADR's failure value) is NULL, once;
--   follow_decision(llm, emb, thresh)  which branch of the ADR's CASE a retrieval takes, once;
--   follow_verdict(decision)           the branch as followed / ignored / unknown, once;
--   tip_followed / follow_weight       that decision as a verdict / as the branch's coefficient,
--                                      read through ctxgraph.param(), which raises on a missing row.
-- Behaviour is the ADR's and unchanged for every existing input.
BEGIN;

CREATE FUNCTION ctxgraph.known_cosine(emb double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT nullif(emb, 'NaN'::double precision) $$;

COMMENT ON FUNCTION ctxgraph.known_cosine(double precision) IS
    'The cosine the embedding leg stored, with NaN (a failed encoding) read as NULL: the one definition of NaN-as-NULL.';

-- Pure and inlinable: callers pass the threshold, so a view can read it once per query.
CREATE FUNCTION ctxgraph.follow_decision(llm boolean, emb double precision, emb_threshold double precision)
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

-- The verdict a branch stands for: followed, ignored, or unknown (unscored).
CREATE FUNCTION ctxgraph.follow_verdict(decision text)
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

COMMENT ON FUNCTION ctxgraph.follow_verdict(text) IS
    'The follow verdict of a follow_decision branch: true for *_followed, false for *_ignored, NULL for unscored.';

CREATE OR REPLACE FUNCTION ctxgraph.tip_followed(llm boolean, emb double precision)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT ctxgraph.follow_verdict(ctxgraph.follow_decision(llm, emb, ctxgraph.param('follow.emb_threshold')))
$$;

CREATE OR REPLACE FUNCTION ctxgraph.follow_weight(llm boolean, emb double precision)
RETURNS double precision
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT ctxgraph.param('follow.weight.' || ctxgraph.follow_decision(llm, emb, ctxgraph.param('follow.emb_threshold')))
$$;

REVOKE ALL ON FUNCTION ctxgraph.known_cosine(double precision),
    ctxgraph.follow_decision(boolean, double precision, double precision), ctxgraph.follow_verdict(text) FROM PUBLIC;
DO $$ BEGIN PERFORM ctxgraph._grant('EXECUTE ON FUNCTION ctxgraph.known_cosine(double precision), '
                       'ctxgraph.follow_decision(boolean, double precision, double precision), '
                       'ctxgraph.follow_verdict(text)',
                       '{writer,scorer,ranker,analyst}'); END $$;

COMMIT;
