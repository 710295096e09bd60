-- Verify ctxgraph:function_follow_weight on pg

SELECT 'ctxgraph.known_cosine(double precision)'::regprocedure,
       'ctxgraph.follow_decision(boolean, double precision, double precision)'::regprocedure,
       'ctxgraph.follow_verdict(text)'::regprocedure,
       'ctxgraph.follow_weight(boolean, double precision)'::regprocedure,
       'ctxgraph.tip_followed(boolean, double precision)'::regprocedure;
-- The ADR's rule, against the coefficients in force (operators tune them): the judge wins, the
-- cosine decides at the threshold when the judge is silent, NaN is no signal, neither is 0.5.
DO $$
DECLARE
    t double precision := ctxgraph.param('follow.emb_threshold');
BEGIN
    IF ctxgraph.follow_weight(true, 0.0) <> ctxgraph.param('follow.weight.judge_followed')
       OR ctxgraph.follow_weight(false, 0.99) <> ctxgraph.param('follow.weight.judge_ignored')
       OR ctxgraph.follow_weight(NULL, t) <> ctxgraph.param('follow.weight.emb_followed')
       OR ctxgraph.follow_weight(NULL, t - 0.001) <> ctxgraph.param('follow.weight.emb_ignored')
       OR ctxgraph.follow_weight(NULL, NULL) <> ctxgraph.param('follow.weight.unscored')
       OR ctxgraph.follow_weight(NULL, 'NaN') <> ctxgraph.param('follow.weight.unscored') THEN
        RAISE EXCEPTION 'verify: follow_weight does not follow the DEF-27 rule';
    END IF;
    IF ctxgraph.tip_followed(true, 0.0) IS NOT TRUE OR ctxgraph.tip_followed(false, 0.99) IS NOT FALSE
       OR ctxgraph.tip_followed(NULL, t) IS NOT TRUE OR ctxgraph.tip_followed(NULL, t - 0.001) IS NOT FALSE
       OR ctxgraph.tip_followed(NULL, 'NaN') IS NOT NULL OR ctxgraph.tip_followed(NULL, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'verify: tip_followed does not follow the DEF-27 rule';
    END IF;
    IF ctxgraph.known_cosine('NaN') IS NOT NULL OR ctxgraph.known_cosine(0.25) <> 0.25 THEN
        RAISE EXCEPTION 'verify: known_cosine does not read NaN as NULL';
    END IF;
END
$$;
-- A missing coefficient is an error, never a silent weight (rolled back).
DO $$
BEGIN
    DELETE FROM ctxgraph.parameters WHERE name = 'follow.emb_threshold';
    PERFORM ctxgraph.follow_weight(NULL, 0.9);
    RAISE EXCEPTION 'verify: follow_weight answered without follow.emb_threshold';
EXCEPTION WHEN invalid_parameter_value THEN NULL;
END
$$;
SELECT 1 / has_function_privilege('ctxgraph_ranker', 'ctxgraph.follow_weight(boolean, double precision)', 'EXECUTE')::int;
