-- Deploy ctxgraph:view_follow_agreement to pg
-- requires: view_follow_agreement@v0.5.0

-- Rework: cohen_kappa as one expression. The released body (a subquery and a UNION ALL) cannot be
-- inlined, so the threshold sweep of follow_agreement ran it as a function call twice per judged
-- retrieval: 18 us a call, most of the view's time (700 ms on a 49,480-row log, 170 ms inlined).
-- The arithmetic is the released one, in the same order (the same bits): n, the observed and the
-- expected agreement; NULL when there is nothing to rate or the expected agreement is 1.
--
-- And the threshold sweep over bins of 0.001 of cosine: released, it sorted every judged row and
-- then sorted them again by kappa (1.5 to 3.2 s of `ctxgraph audit` at 1M rows); now one hash
-- aggregate puts the rows in at most 2,001 bins per skill and the sweep runs over the bins (0.5 s).
-- Each bin's smallest cosine is a candidate and its kappa is exact, as the rows at or above it
-- are exactly that bin and the bins above; a better threshold inside a bin, if any, is not tried,
-- so best_threshold is the best to 0.001, which is what an operator sets. Same columns.
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph.cohen_kappa(both_yes bigint, first_only bigint, second_only bigint, both_no bigint)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
               WHEN both_yes + first_only + second_only + both_no = 0 THEN NULL
               WHEN ((both_yes + first_only) * (both_yes + second_only) + (second_only + both_no) * (first_only + both_no))
                    / ((both_yes + first_only + second_only + both_no)::double precision
                       * (both_yes + first_only + second_only + both_no)::double precision) >= 1 THEN NULL
               ELSE ((both_yes + both_no) / (both_yes + first_only + second_only + both_no)::double precision
                     - ((both_yes + first_only) * (both_yes + second_only) + (second_only + both_no) * (first_only + both_no))
                       / ((both_yes + first_only + second_only + both_no)::double precision
                          * (both_yes + first_only + second_only + both_no)::double precision))
                    / (1 - ((both_yes + first_only) * (both_yes + second_only) + (second_only + both_no) * (first_only + both_no))
                           / ((both_yes + first_only + second_only + both_no)::double precision
                              * (both_yes + first_only + second_only + both_no)::double precision))
           END
$$;

COMMENT ON FUNCTION ctxgraph.cohen_kappa(bigint, bigint, bigint, bigint) IS
    'Cohen''s kappa of two yes/no raters from their 2x2 confusion counts; NULL when undefined. One expression, so the planner inlines it.';

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
bins AS (
    -- One row per skill and 0.001 of cosine: its smallest cosine, its judged rows and the confusion
    -- counts at the rule's threshold. One hash aggregate over the judged rows, not a sort of them.
    SELECT j.skill, floor(j.emb * 1000) AS bin, min(j.emb) AS candidate,
           count(*) FILTER (WHERE j.llm) AS judge_followed, count(*) AS n,
           count(*) FILTER (WHERE j.llm AND j.emb_followed) AS both_followed,
           count(*) FILTER (WHERE j.llm AND NOT j.emb_followed) AS judge_only_followed,
           count(*) FILTER (WHERE NOT j.llm AND j.emb_followed) AS emb_only_followed,
           count(*) FILTER (WHERE NOT j.llm AND NOT j.emb_followed) AS both_ignored
      FROM judged AS j
     GROUP BY j.skill, floor(j.emb * 1000)
),
counts AS (
    SELECT b.skill, sum(b.both_followed)::bigint AS both_followed, sum(b.judge_only_followed)::bigint AS judge_only_followed,
           sum(b.emb_only_followed)::bigint AS emb_only_followed, sum(b.both_ignored)::bigint AS both_ignored
      FROM bins AS b
     GROUP BY b.skill
),
sweep AS (
    -- Each bin's smallest cosine as a candidate threshold: the rows at or above it are exactly the
    -- rows of that bin and the bins above, so its kappa is exact; a candidate inside a bin is not
    -- tried (thresholds are read to 0.001).
    SELECT b.skill, b.candidate,
           sum(b.judge_followed) OVER above AS both_followed,
           sum(b.n) OVER above AS emb_followed,
           sum(b.judge_followed) OVER everything AS judge_followed,
           sum(b.n) OVER everything AS n
      FROM bins AS b
    WINDOW above AS (PARTITION BY b.skill ORDER BY b.bin DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW),
           everything AS (PARTITION BY b.skill)
),
best AS (
    SELECT DISTINCT ON (s.skill) s.skill, s.candidate AS best_threshold,
           ctxgraph.cohen_kappa(s.both_followed::bigint, (s.judge_followed - s.both_followed)::bigint,
                                (s.emb_followed - s.both_followed)::bigint,
                                (s.n - s.judge_followed - s.emb_followed + s.both_followed)::bigint) AS best_kappa
      FROM sweep AS s
     ORDER BY s.skill, 3 DESC NULLS LAST, s.candidate
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
