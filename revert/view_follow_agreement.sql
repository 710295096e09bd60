-- Revert ctxgraph:view_follow_agreement from pg

-- Back to cohen_kappa as released (view_follow_agreement@v0.3.0): the subquery form; and the view
-- as @v0.5.0 defines it (the exact sweep over every judged row).
BEGIN;

CREATE OR REPLACE VIEW ctxgraph.follow_agreement AS
WITH threshold AS (
    SELECT ctxgraph.param('follow.emb_threshold') AS t
),
judged AS (
    -- emb_followed: what the embedding leg alone decides (the follow rule with the judge silent).
    SELECT r.skill, r.tip_followed_llm AS llm, ctxgraph.known_cosine(r.tip_followed_emb) AS emb,
           ctxgraph.follow_verdict(ctxgraph.follow_decision(NULL, r.tip_followed_emb, th.t)) AS emb_followed
      FROM ctxgraph.tip_retrievals AS r CROSS JOIN threshold AS th
     WHERE r.tip_followed_llm IS NOT NULL
       AND ctxgraph.known_cosine(r.tip_followed_emb) IS NOT NULL
),
counts AS (
    SELECT j.skill,
           count(*) FILTER (WHERE j.llm AND j.emb_followed) AS both_followed,
           count(*) FILTER (WHERE j.llm AND NOT j.emb_followed) AS judge_only_followed,
           count(*) FILTER (WHERE NOT j.llm AND j.emb_followed) AS emb_only_followed,
           count(*) FILTER (WHERE NOT j.llm AND NOT j.emb_followed) AS both_ignored
      FROM judged AS j
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



CREATE OR REPLACE FUNCTION ctxgraph.cohen_kappa(both_yes bigint, first_only bigint, second_only bigint, both_no bigint)
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

COMMIT;
