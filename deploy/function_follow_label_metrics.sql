-- Deploy ctxgraph:function_follow_label_metrics to pg
-- requires: function_follow_label_metrics@v0.5.0
-- requires: function_write_checks

-- Rework: the arguments are checked before anything is measured. gold[i] is the label of
-- retrieval_ids[i]: released, arrays of different lengths were padded with NULLs by unnest (and the
-- unmatched entries silently dropped), two-dimensional ones flattened, and a NULL or unknown skill
-- answered legs with nothing labelled. Now a NULL skill or array raises 22004, an unknown skill,
-- arrays of other lengths or of more than one dimension 22023. Same result otherwise.
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph.follow_label_metrics(skill text, retrieval_ids bigint[], gold boolean[])
RETURNS TABLE (
    leg text, labelled bigint, covered bigint, accuracy double precision, kappa double precision,
    auc double precision, threshold double precision, best_threshold double precision,
    best_accuracy double precision
)
LANGUAGE sql STABLE
AS $$
    SELECT ctxgraph._require_skill(follow_label_metrics.skill);
    -- _raise_problem is IMMUTABLE: with constant arguments only, the planner would run it (and
    -- raise) while planning; each message names the skill or the arrays, so it runs only when its
    -- check fails.
    SELECT ctxgraph._raise_problem('22004', format('ctxgraph: follow_label_metrics(%L) needs retrieval_ids and gold',
                                                   follow_label_metrics.skill), NULL)
     WHERE follow_label_metrics.retrieval_ids IS NULL OR follow_label_metrics.gold IS NULL;
    SELECT ctxgraph._raise_problem('22023', format('ctxgraph: retrieval_ids and gold must be one-dimensional arrays, got %s and %s dimensions',
                                                   array_ndims(follow_label_metrics.retrieval_ids), array_ndims(follow_label_metrics.gold)), NULL)
     WHERE coalesce(array_ndims(follow_label_metrics.retrieval_ids), 1) <> 1 OR coalesce(array_ndims(follow_label_metrics.gold), 1) <> 1;
    SELECT ctxgraph._raise_problem('22023', format('ctxgraph: %s retrieval ids but %s gold labels',
                                                   cardinality(follow_label_metrics.retrieval_ids), cardinality(follow_label_metrics.gold)),
                                   'gold[i] is the label of retrieval_ids[i].')
     WHERE cardinality(follow_label_metrics.retrieval_ids) <> cardinality(follow_label_metrics.gold);
    WITH labels AS (
        SELECT DISTINCT ON (l.id) l.id, l.followed
          FROM unnest(follow_label_metrics.retrieval_ids, follow_label_metrics.gold) AS l (id, followed)
         WHERE l.id IS NOT NULL AND l.followed IS NOT NULL
         ORDER BY l.id
    ),
    rows AS (
        SELECT l.followed AS gold, r.tip_followed_llm AS llm, ctxgraph.known_cosine(r.tip_followed_emb) AS emb,
               -- What the embedding leg alone decides: the follow rule with the judge silent.
               ctxgraph.follow_verdict(ctxgraph.follow_decision(NULL, r.tip_followed_emb,
                                                                (SELECT ctxgraph.param('follow.emb_threshold')))) AS emb_followed
          FROM labels AS l
          JOIN ctxgraph.tip_retrievals AS r ON r.skill = follow_label_metrics.skill AND r.id = l.id
    ),
    threshold AS (SELECT ctxgraph.param('follow.emb_threshold') AS t),
    ranked AS (
        -- Mid-ranks for ties: (first rank + last rank) / 2, for the Mann-Whitney AUC.
        SELECT r.gold, r.emb,
               (rank() OVER (ORDER BY r.emb)
                + count(*) OVER (ORDER BY r.emb RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) / 2.0 AS mid_rank
          FROM rows AS r WHERE r.emb IS NOT NULL
    ),
    sweep AS (
        SELECT r.emb AS candidate,
               (count(*) FILTER (WHERE r.gold) OVER above
                + count(*) FILTER (WHERE NOT r.gold) OVER everything
                - count(*) FILTER (WHERE NOT r.gold) OVER above)::double precision
               / count(*) OVER everything AS accuracy
          FROM rows AS r WHERE r.emb IS NOT NULL
        WINDOW above AS (ORDER BY r.emb DESC RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW),
               everything AS ()
    ),
    best AS (SELECT s.candidate, s.accuracy FROM sweep AS s ORDER BY s.accuracy DESC, s.candidate LIMIT 1)
    SELECT 'judge',
           (SELECT count(*) FROM rows),
           count(*),
           avg((r.llm = r.gold)::int::double precision),
           ctxgraph.cohen_kappa(count(*) FILTER (WHERE r.llm AND r.gold), count(*) FILTER (WHERE r.llm AND NOT r.gold),
                                count(*) FILTER (WHERE NOT r.llm AND r.gold), count(*) FILTER (WHERE NOT r.llm AND NOT r.gold)),
           NULL::double precision, NULL::double precision, NULL::double precision, NULL::double precision
      FROM rows AS r WHERE r.llm IS NOT NULL
    UNION ALL
    SELECT 'embedding',
           (SELECT count(*) FROM rows),
           count(*),
           avg((r.emb_followed = r.gold)::int::double precision),
           ctxgraph.cohen_kappa(
               count(*) FILTER (WHERE r.emb_followed AND r.gold),
               count(*) FILTER (WHERE r.emb_followed AND NOT r.gold),
               count(*) FILTER (WHERE NOT r.emb_followed AND r.gold),
               count(*) FILTER (WHERE NOT r.emb_followed AND NOT r.gold)),
           (SELECT (sum(k.mid_rank) FILTER (WHERE k.gold) - count(*) FILTER (WHERE k.gold) * (count(*) FILTER (WHERE k.gold) + 1) / 2.0)
                   / nullif(count(*) FILTER (WHERE k.gold) * count(*) FILTER (WHERE NOT k.gold), 0)
              FROM ranked AS k),
           (SELECT th.t FROM threshold AS th),
           (SELECT b.candidate FROM best AS b),
           (SELECT b.accuracy FROM best AS b)
      FROM rows AS r
     WHERE r.emb IS NOT NULL
$$;

COMMIT;
