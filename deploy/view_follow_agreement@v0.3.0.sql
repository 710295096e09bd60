-- Deploy ctxgraph:view_follow_agreement to pg
-- requires: function_follow_weight

-- The ADR's open question, "can we drop the judge?", answered with data: how often the
-- embedding leg (cosine >= follow.emb_threshold) agrees with the LLM judge, as confusion counts
-- and Cohen's kappa, and which threshold would have agreed best on the rows judged so far.
BEGIN;

CREATE FUNCTION ctxgraph.cohen_kappa(both_yes bigint, first_only bigint, second_only bigint, both_no bigint)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN n = 0 OR expected >= 1 THEN NULL ELSE (observed - expected) / (1 - expected) END
      FROM (SELECT n,
                   (both_yes + both_no) / n AS observed,
                   ((both_yes + first_only) * (both_yes + second_only)
                    + (second_only + both_no) * (first_only + both_no)) / (n * n) AS expected
              FROM (SELECT (both_yes + first_only + second_only + both_no)::double precision AS n) AS total
             WHERE n > 0) AS k
    UNION ALL
    SELECT NULL WHERE both_yes + first_only + second_only + both_no = 0
$$;

COMMENT ON FUNCTION ctxgraph.cohen_kappa(bigint, bigint, bigint, bigint) IS
    'Cohen''s kappa of two yes/no raters from their 2x2 confusion counts; NULL when undefined.';

CREATE VIEW ctxgraph.follow_agreement AS
WITH judged AS (
    SELECT r.skill, r.tip_followed_llm AS llm, r.tip_followed_emb AS emb
      FROM ctxgraph.tip_retrievals AS r
     WHERE r.tip_followed_llm IS NOT NULL
       AND r.tip_followed_emb IS NOT NULL AND r.tip_followed_emb <> 'NaN'::double precision
),
threshold AS (
    SELECT p.value AS t FROM ctxgraph.parameters AS p WHERE p.name = 'follow.emb_threshold'
),
counts AS (
    SELECT j.skill,
           count(*) FILTER (WHERE j.llm AND j.emb >= th.t) AS both_followed,
           count(*) FILTER (WHERE j.llm AND j.emb < th.t) AS judge_only_followed,
           count(*) FILTER (WHERE NOT j.llm AND j.emb >= th.t) AS emb_only_followed,
           count(*) FILTER (WHERE NOT j.llm AND j.emb < th.t) AS both_ignored
      FROM judged AS j CROSS JOIN threshold AS th
     GROUP BY j.skill
),
sweep AS (
    -- Every judged cosine as a candidate threshold, in one sorted pass: the rows at or above it
    -- are the ones the embedding would call followed.
    SELECT j.skill, j.emb AS candidate,
           count(*) FILTER (WHERE j.llm) OVER above AS both_followed,
           count(*) OVER above AS emb_followed,
           count(*) FILTER (WHERE j.llm) OVER everything AS judge_followed,
           count(*) OVER everything AS n
      FROM judged AS j
    WINDOW above AS (PARTITION BY j.skill ORDER BY j.emb DESC RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW),
           everything AS (PARTITION BY j.skill)
),
best AS (
    SELECT DISTINCT ON (s.skill) s.skill, s.candidate AS best_threshold,
           ctxgraph.cohen_kappa(s.both_followed, s.judge_followed - s.both_followed,
                                s.emb_followed - s.both_followed,
                                s.n - s.judge_followed - s.emb_followed + s.both_followed) AS best_kappa
      FROM sweep AS s
     ORDER BY s.skill,
              ctxgraph.cohen_kappa(s.both_followed, s.judge_followed - s.both_followed,
                                   s.emb_followed - s.both_followed,
                                   s.n - s.judge_followed - s.emb_followed + s.both_followed) DESC NULLS LAST,
              s.candidate
)
SELECT sk.name AS skill,
       coalesce(c.both_followed + c.judge_only_followed + c.emb_only_followed + c.both_ignored, 0) AS judged,
       coalesce(c.both_followed, 0) AS both_followed,
       coalesce(c.judge_only_followed, 0) AS judge_only_followed,
       coalesce(c.emb_only_followed, 0) AS emb_only_followed,
       coalesce(c.both_ignored, 0) AS both_ignored,
       (c.both_followed + c.both_ignored)::double precision
           / nullif(c.both_followed + c.judge_only_followed + c.emb_only_followed + c.both_ignored, 0) AS agreement,
       ctxgraph.cohen_kappa(c.both_followed, c.judge_only_followed, c.emb_only_followed, c.both_ignored) AS kappa,
       (SELECT th.t FROM threshold AS th) AS threshold,
       b.best_threshold,
       b.best_kappa
  FROM ctxgraph.skills AS sk
  LEFT JOIN counts AS c ON c.skill = sk.name
  LEFT JOIN best AS b ON b.skill = sk.name;

COMMENT ON VIEW ctxgraph.follow_agreement IS
    'Per skill: agreement between the LLM judge and the embedding leg (cosine >= follow.emb_threshold) on rows both scored, Cohen''s kappa, and the threshold that would maximise kappa.';
COMMENT ON COLUMN ctxgraph.follow_agreement.skill IS 'The skill.';
COMMENT ON COLUMN ctxgraph.follow_agreement.judged IS 'Retrievals with both a judge verdict and a cosine.';
COMMENT ON COLUMN ctxgraph.follow_agreement.both_followed IS 'Judge followed, cosine at or above the threshold.';
COMMENT ON COLUMN ctxgraph.follow_agreement.judge_only_followed IS 'Judge followed, cosine below the threshold.';
COMMENT ON COLUMN ctxgraph.follow_agreement.emb_only_followed IS 'Judge not followed, cosine at or above the threshold.';
COMMENT ON COLUMN ctxgraph.follow_agreement.both_ignored IS 'Judge not followed, cosine below the threshold.';
COMMENT ON COLUMN ctxgraph.follow_agreement.agreement IS 'Share of judged rows where the two legs agree.';
COMMENT ON COLUMN ctxgraph.follow_agreement.kappa IS 'Cohen''s kappa between the legs at the current threshold.';
COMMENT ON COLUMN ctxgraph.follow_agreement.threshold IS 'The current follow.emb_threshold.';
COMMENT ON COLUMN ctxgraph.follow_agreement.best_threshold IS 'The judged cosine that, used as threshold, maximises kappa.';
COMMENT ON COLUMN ctxgraph.follow_agreement.best_kappa IS 'Kappa at best_threshold.';

GRANT EXECUTE ON FUNCTION ctxgraph.cohen_kappa(bigint, bigint, bigint, bigint)
    TO ctxgraph_writer, ctxgraph_scorer, ctxgraph_ranker, ctxgraph_analyst;
GRANT SELECT ON ctxgraph.follow_agreement TO ctxgraph_analyst;

DO $$ BEGIN PERFORM ctxgraph.expose_skill_view('follow_agreement'); END $$;

COMMIT;
