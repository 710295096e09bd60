-- Revert ctxgraph:view_follow_agreement from pg

-- Back to the definition released at @v0.3.0 (same columns, replaced in place).
BEGIN;

CREATE OR REPLACE VIEW ctxgraph.follow_agreement AS
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

COMMIT;
