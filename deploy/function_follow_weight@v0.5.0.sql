-- Deploy ctxgraph:function_follow_weight to pg
-- requires: function_follow_weight@v0.4.0
-- requires: table_group_roles

-- Rework: a third signal in the follow rule. The scoring pass now writes follow_probability, a
-- calibrated probability that the script followed the tip, computed without the judge. The
-- judge's verdict still wins; when it is silent the probability decides (signal_followed at or
-- above follow.probability_threshold, else signal_ignored), ahead of the cosine, which is its
-- input and less calibrated; the cosine and unscored branches stay as they were for rows without
-- a probability. The rule is still written once: the 5-input follow_decision is the one CASE,
-- and the released 3-input form is that decision with no probability, so its answers (and those
-- of the 2-argument tip_followed and follow_weight, whose bodies are unchanged) are the ADR's
-- for every input. New 3-argument tip_followed and follow_weight take the probability.
BEGIN;

INSERT INTO ctxgraph.parameters (name, value, description) VALUES
    ('follow.probability_threshold', 0.5,
     'Follow probability at or above which the calibrated signal counts a tip as followed when the judge is silent.'),
    ('follow.weight.signal_followed', 1.0,
     'Follow weight with no judge verdict and a follow probability at or above follow.probability_threshold.'),
    ('follow.weight.signal_ignored', 0.0,
     'Follow weight with no judge verdict and a follow probability below follow.probability_threshold.');

-- Pure and inlinable like the 3-input form: callers pass both thresholds. NaN in either signal is
-- no signal.
CREATE FUNCTION ctxgraph.follow_decision(llm boolean, emb double precision, probability double precision,
                                         emb_threshold double precision, probability_threshold double precision)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
               WHEN llm THEN 'judge_followed'
               WHEN NOT llm THEN 'judge_ignored'
               WHEN nullif(probability, 'NaN'::double precision) IS NOT NULL THEN
                   CASE WHEN probability >= probability_threshold THEN 'signal_followed' ELSE 'signal_ignored' END
               WHEN ctxgraph.known_cosine(emb) IS NULL THEN 'unscored'
               WHEN ctxgraph.known_cosine(emb) >= emb_threshold THEN 'emb_followed'
               ELSE 'emb_ignored'
           END
$$;

COMMENT ON FUNCTION ctxgraph.follow_decision(boolean, double precision, double precision, double precision, double precision) IS
    'Which branch of the follow rule a retrieval takes: judge_followed, judge_ignored (the judge''s verdict wins), signal_followed / signal_ignored (the follow probability against its threshold when the judge is silent), emb_followed / emb_ignored (the cosine against its threshold when there is no probability either), unscored (no signal). follow.weight.<branch> is its coefficient.';

CREATE OR REPLACE FUNCTION ctxgraph.follow_decision(llm boolean, emb double precision, emb_threshold double precision)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT ctxgraph.follow_decision(llm, emb, NULL::double precision, emb_threshold, NULL::double precision)
$$;

COMMENT ON FUNCTION ctxgraph.follow_decision(boolean, double precision, double precision) IS
    'Which branch of the DEF-27 follow rule a retrieval without a follow probability takes: judge_followed, judge_ignored (the judge''s verdict wins), emb_followed / emb_ignored (cosine against the threshold when the judge is silent), unscored (neither signal). follow.weight.<branch> is its coefficient.';

CREATE OR REPLACE FUNCTION ctxgraph.follow_verdict(decision text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE decision
               WHEN 'judge_followed' THEN true
               WHEN 'signal_followed' THEN true
               WHEN 'emb_followed' THEN true
               WHEN 'judge_ignored' THEN false
               WHEN 'signal_ignored' THEN false
               WHEN 'emb_ignored' THEN false
           END
$$;

CREATE FUNCTION ctxgraph.tip_followed(llm boolean, emb double precision, probability double precision)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT ctxgraph.follow_verdict(ctxgraph.follow_decision(llm, emb, probability, ctxgraph.param('follow.emb_threshold'),
                                                            ctxgraph.param('follow.probability_threshold')))
$$;

COMMENT ON FUNCTION ctxgraph.tip_followed(boolean, double precision, double precision) IS
    'The follow verdict of a retrieval: the judge''s, else follow probability >= follow.probability_threshold, else cosine >= follow.emb_threshold, else NULL.';

CREATE FUNCTION ctxgraph.follow_weight(llm boolean, emb double precision, probability double precision)
RETURNS double precision
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT ctxgraph.param('follow.weight.' || ctxgraph.follow_decision(llm, emb, probability,
                                                                       ctxgraph.param('follow.emb_threshold'),
                                                                       ctxgraph.param('follow.probability_threshold')))
$$;

COMMENT ON FUNCTION ctxgraph.follow_weight(boolean, double precision, double precision) IS
    'The follow weight of a retrieval: follow.weight.<branch> of follow_decision with the judge''s verdict, the cosine and the follow probability.';

REVOKE ALL ON FUNCTION
    ctxgraph.follow_decision(boolean, double precision, double precision, double precision, double precision),
    ctxgraph.tip_followed(boolean, double precision, double precision),
    ctxgraph.follow_weight(boolean, double precision, double precision) FROM PUBLIC;
DO $$ BEGIN PERFORM ctxgraph._grant('EXECUTE ON FUNCTION '
                       'ctxgraph.follow_decision(boolean, double precision, double precision, double precision, double precision), '
                       'ctxgraph.tip_followed(boolean, double precision, double precision), '
                       'ctxgraph.follow_weight(boolean, double precision, double precision)',
                       '{writer,scorer,ranker,analyst}'); END $$;

COMMIT;
