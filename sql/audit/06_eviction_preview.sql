-- Audit 6: eviction preview: what ctxgraph.evict_tips(skill) would retire now, with the evidence.
-- Nothing is changed. Run: psql -v skill=stig -f sql/audit/06_eviction_preview.sql
\set ON_ERROR_STOP 1
\pset footer off
\pset format wrapped
\echo '== Eviction preview (skill' :skill ')'
-- section: eviction
SELECT tip_id, rule_id, attempts, runs, round(followed_attempts::numeric, 1) AS followed,
       round(followed_outcome::numeric, 3) AS followed_outcome, round(rule_baseline::numeric, 3) AS baseline,
       round(shortfall_lower_bound::numeric, 3) AS shortfall, round(harm_attempts::numeric, 1) AS harm, reason
  FROM ctxgraph.eviction_candidates
 WHERE skill = :'skill'
 ORDER BY tip_id;
