-- Audit 8: the figures behind the pictures of `ctxgraph audit --html`: every scored tip's outcome-only
-- hit rate against its follow rate (and whether the detector calls it misleading), the cosines of the
-- retrievals the judge called followed or ignored, and the detector's thresholds.
-- Run: psql -v skill=stig -f sql/audit/08_picture_data.sql   Optional: -v run=run-7 (cosines of one run).
\set ON_ERROR_STOP 1
\pset footer off
\if :{?run}
\else
\set run ''
\endif
\echo '== Tips: outcome-only hit rate, follow-weighted hit rate, follow rate (skill' :skill ')'
-- section: tip_points
SELECT h.tip_id, coalesce(h.rule_id, '(general)') AS rule_id, h.outcome_hit_rate, h.hit_rate, h.follow_rate,
       h.attempts,
       EXISTS (SELECT 1 FROM ctxgraph.misleading_tips AS m WHERE m.skill = h.skill AND m.tip_id = h.tip_id)
           AS misleading
  FROM ctxgraph.tip_hit_rates AS h
 WHERE h.skill = :'skill' AND h.scored > 0
 ORDER BY h.tip_id;
\echo '== Cosines of judged retrievals'
-- section: judged_cosines
SELECT tip_followed_llm AS judge_followed, tip_followed_emb AS cosine
  FROM ctxgraph.tip_retrievals
 WHERE skill = :'skill' AND (:'run' = '' OR run_id = :'run')
   AND tip_followed_llm IS NOT NULL AND tip_followed_emb IS NOT NULL
   AND tip_followed_emb <> 'NaN'::double precision
 ORDER BY id;
\echo '== Misleading-tip thresholds'
-- section: misleading_thresholds
SELECT max(value) FILTER (WHERE name = 'misleading.min_outcome_hit_rate') AS min_outcome_hit_rate,
       max(value) FILTER (WHERE name = 'misleading.max_follow_rate') AS max_follow_rate
  FROM ctxgraph.parameters;
