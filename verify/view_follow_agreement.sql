-- Verify ctxgraph:view_follow_agreement on pg

SELECT skill, judged, both_followed, judge_only_followed, emb_only_followed, both_ignored, agreement, kappa,
       threshold, best_threshold, best_kappa
  FROM ctxgraph.follow_agreement WHERE FALSE;
SELECT judged, kappa, best_threshold FROM stig.follow_agreement WHERE FALSE;
SELECT 1 / (ctxgraph.cohen_kappa(5, 0, 0, 5) = 1)::int;
