-- Audit 5: judge / embedding agreement (confusion counts, Cohen's kappa, the threshold that would
-- maximise kappa), then the stark disagreements worth a look.
-- Run: psql -v skill=stig -f sql/audit/05_agreement_anomalies.sql   Optional: -v run=run-7 (anomalies of one run).
\set ON_ERROR_STOP 1
\pset footer off
\pset format wrapped
\if :{?run}
\else
\set run ''
\endif
\echo '== Judge / embedding agreement (skill' :skill ')'
-- section: agreement
SELECT judged, both_followed, judge_only_followed, emb_only_followed, both_ignored,
       round(agreement::numeric, 3) AS agreement, round(kappa::numeric, 3) AS kappa, threshold,
       round(best_threshold::numeric, 3) AS best_threshold, round(best_kappa::numeric, 3) AS best_kappa
  FROM ctxgraph.follow_agreement
 WHERE skill = :'skill';
\echo '== Anomalies'
-- section: anomalies
SELECT retrieval_id, run_id, rule_id, tip_id, tip_followed_llm AS judge,
       round(tip_followed_emb::numeric, 3) AS cosine, kind
  FROM ctxgraph.follow_anomalies
 WHERE skill = :'skill' AND (:'run' = '' OR run_id = :'run')
 ORDER BY retrieval_id
 LIMIT 50;
