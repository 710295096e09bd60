-- Audit 4 (ADR-0019 section 4): the misleading-tip detector. Tips that outcome-only credit calls
-- helpful although the Worker rarely followed them. Thresholds: misleading.* in ctxgraph.parameters.
-- Run: psql -v skill=stig -f sql/audit/04_misleading_tips.sql
\set ON_ERROR_STOP 1
\pset footer off
\pset format wrapped
\echo '== Misleading tips (skill' :skill ')'
-- section: misleading
SELECT tip_id, rule_id, round(outcome_hit_rate::numeric, 3) AS outcome_only, round(hit_rate::numeric, 3) AS hit_rate,
       round(follow_rate::numeric, 3) AS follow_rate, round(credit_gap::numeric, 3) AS credit_gap, attempts,
       retired, body AS tip
  FROM ctxgraph.misleading_tips
 WHERE skill = :'skill'
 ORDER BY credit_gap DESC, tip_id;
