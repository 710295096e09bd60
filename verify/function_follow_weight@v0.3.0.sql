-- Verify ctxgraph:function_follow_weight on pg

SELECT 'ctxgraph.follow_weight(boolean, double precision)'::regprocedure;
SELECT 'ctxgraph.tip_followed(boolean, double precision)'::regprocedure;
SELECT 1 / (COUNT(*) = 6)::int FROM ctxgraph.parameters
 WHERE name IN ('follow.weight.judge_followed', 'follow.weight.judge_ignored', 'follow.weight.emb_followed',
                'follow.weight.emb_ignored', 'follow.weight.unscored', 'follow.emb_threshold');
SELECT 1 / (COUNT(*) = 4)::int FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_writer', 'ctxgraph_scorer', 'ctxgraph_ranker', 'ctxgraph_analyst')
   AND pg_catalog.has_function_privilege(r.oid, 'ctxgraph.follow_weight(boolean, double precision)', 'EXECUTE')
   AND pg_catalog.has_function_privilege(r.oid, 'ctxgraph.tip_followed(boolean, double precision)', 'EXECUTE');

-- The DEF-27 decision against the parameters in force: the judge wins over the cosine, the
-- cosine decides at the threshold (inclusive), neither signal (or NaN) is "unscored".
SELECT 1 / (COUNT(*) = COUNT(*) FILTER (WHERE ok))::int
  FROM (SELECT ctxgraph.param('follow.emb_threshold') AS t) AS th,
       LATERAL (VALUES
           (ctxgraph.follow_weight(true, NULL) = ctxgraph.param('follow.weight.judge_followed')),
           (ctxgraph.follow_weight(true, -1) = ctxgraph.param('follow.weight.judge_followed')),
           (ctxgraph.follow_weight(false, NULL) = ctxgraph.param('follow.weight.judge_ignored')),
           (ctxgraph.follow_weight(false, 1) = ctxgraph.param('follow.weight.judge_ignored')),
           (ctxgraph.follow_weight(NULL, NULL) = ctxgraph.param('follow.weight.unscored')),
           (ctxgraph.follow_weight(NULL, 'NaN') = ctxgraph.param('follow.weight.unscored')),
           (ctxgraph.follow_weight(NULL, th.t) = ctxgraph.param('follow.weight.emb_followed')),
           (ctxgraph.follow_weight(NULL, th.t - 1e-6) = ctxgraph.param('follow.weight.emb_ignored')),
           (ctxgraph.tip_followed(true, -1)),
           (NOT ctxgraph.tip_followed(false, 1)),
           (ctxgraph.tip_followed(NULL, th.t)),
           (NOT ctxgraph.tip_followed(NULL, th.t - 1e-6)),
           (ctxgraph.tip_followed(NULL, NULL) IS NULL),
           (ctxgraph.tip_followed(NULL, 'NaN') IS NULL)
       ) AS v (ok);
