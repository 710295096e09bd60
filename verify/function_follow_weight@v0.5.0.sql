-- Verify ctxgraph:function_follow_weight on pg

SELECT 'ctxgraph.known_cosine(double precision)'::regprocedure,
       'ctxgraph.follow_decision(boolean, double precision, double precision)'::regprocedure,
       'ctxgraph.follow_decision(boolean, double precision, double precision, double precision, double precision)'::regprocedure,
       'ctxgraph.follow_verdict(text)'::regprocedure,
       'ctxgraph.follow_weight(boolean, double precision)'::regprocedure,
       'ctxgraph.tip_followed(boolean, double precision)'::regprocedure,
       'ctxgraph.follow_weight(boolean, double precision, double precision)'::regprocedure,
       'ctxgraph.tip_followed(boolean, double precision, double precision)'::regprocedure;
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
-- The probability branch, known input and output pairs: the judge wins over the probability, the
-- probability over the cosine, at the threshold is followed, NaN and NULL fall back to the cosine.
DO $$
DECLARE
    pt double precision := ctxgraph.param('follow.probability_threshold');
    c  record;
BEGIN
    FOR c IN
        SELECT * FROM (VALUES
            (true,  0.0::float8, 0.0::float8,   'judge_followed'),
            (false, 0.9,         1.0,           'judge_ignored'),
            (NULL,  0.9,         0.2,           'signal_ignored'),
            (NULL,  0.1,         0.5,           'signal_followed'),
            (NULL,  0.1,         0.4999,        'signal_ignored'),
            (NULL,  0.9,         NULL,          'emb_followed'),
            (NULL,  0.1,         'NaN',         'emb_ignored'),
            (NULL,  NULL,        NULL,          'unscored')) AS v (llm, emb, probability, decision)
    LOOP
        IF ctxgraph.follow_decision(c.llm, c.emb, c.probability, 0.6, 0.5) IS DISTINCT FROM c.decision THEN
            RAISE EXCEPTION 'verify: follow_decision(%, %, %, 0.6, 0.5) is %, expected %', c.llm, c.emb, c.probability,
                ctxgraph.follow_decision(c.llm, c.emb, c.probability, 0.6, 0.5), c.decision;
        END IF;
    END LOOP;
    IF ctxgraph.follow_verdict('signal_followed') IS NOT TRUE OR ctxgraph.follow_verdict('signal_ignored') IS NOT FALSE THEN
        RAISE EXCEPTION 'verify: follow_verdict does not know the signal branches';
    END IF;
    IF ctxgraph.follow_weight(NULL, 0.99, pt) <> ctxgraph.param('follow.weight.signal_followed')
       OR ctxgraph.follow_weight(NULL, 0.99, pt - 0.001) <> ctxgraph.param('follow.weight.signal_ignored')
       OR ctxgraph.follow_weight(false, 0.99, 1.0) <> ctxgraph.param('follow.weight.judge_ignored')
       OR ctxgraph.follow_weight(NULL, NULL, NULL) <> ctxgraph.param('follow.weight.unscored')
       OR ctxgraph.tip_followed(NULL, 0.0, pt) IS NOT TRUE OR ctxgraph.tip_followed(NULL, 0.99, pt - 0.001) IS NOT FALSE
       OR ctxgraph.tip_followed(true, 0.0, 0.0) IS NOT TRUE OR ctxgraph.tip_followed(NULL, NULL, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'verify: follow_weight / tip_followed with a probability do not follow the rule';
    END IF;
    -- Without a probability the 3-input forms are the 2-input ones, and the 3-input decision the
    -- 5-input one.
    IF EXISTS (SELECT 1
                 FROM unnest(ARRAY[true, false, NULL]) AS l (llm),
                      unnest('{0.0,0.59,0.6,0.61,1.0,NaN,NULL}'::float8[]) AS e (emb)
                WHERE ctxgraph.follow_weight(l.llm, e.emb, NULL) IS DISTINCT FROM ctxgraph.follow_weight(l.llm, e.emb)
                   OR ctxgraph.tip_followed(l.llm, e.emb, NULL) IS DISTINCT FROM ctxgraph.tip_followed(l.llm, e.emb)
                   OR ctxgraph.follow_decision(l.llm, e.emb, 0.6)
                      IS DISTINCT FROM ctxgraph.follow_decision(l.llm, e.emb, NULL, 0.6, 0.5)) THEN
        RAISE EXCEPTION 'verify: without a probability the rule is not the DEF-27 rule';
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
DO $$
BEGIN
    DELETE FROM ctxgraph.parameters WHERE name = 'follow.probability_threshold';
    PERFORM ctxgraph.follow_weight(NULL, 0.9, 0.9);
    RAISE EXCEPTION 'verify: follow_weight answered without follow.probability_threshold';
EXCEPTION WHEN invalid_parameter_value THEN NULL;
END
$$;
SELECT 1 / has_function_privilege('ctxgraph_ranker', 'ctxgraph.follow_weight(boolean, double precision)', 'EXECUTE')::int;
SELECT 1 / has_function_privilege('ctxgraph_ranker', 'ctxgraph.follow_weight(boolean, double precision, double precision)', 'EXECUTE')::int;
SELECT 1 / (NOT EXISTS (SELECT 1 FROM pg_catalog.pg_proc AS p, pg_catalog.aclexplode(p.proacl) AS x
                         WHERE p.pronamespace = 'ctxgraph'::regnamespace
                           AND p.proname IN ('follow_decision', 'follow_weight', 'tip_followed') AND x.grantee = 0))::int;
