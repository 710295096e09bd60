-- Audit 3: harmful tips, followed during attempts that broke the system (harm is its own count,
-- not folded into an average). Run: psql -v skill=stig -f sql/audit/03_harmful_tips.sql
\set ON_ERROR_STOP 1
\pset footer off
\pset format wrapped
\echo '== Harmful tips (skill' :skill ')'
-- section: harmful
SELECT tip_id, rule_id, harm, round(harm_rate::numeric, 3) AS harm_rate, round(hit_rate::numeric, 3) AS hit_rate,
       round(follow_rate::numeric, 3) AS follow_rate, attempts, retired, body AS tip
  FROM ctxgraph.harmful_tips
 WHERE skill = :'skill'
 ORDER BY harm DESC, harm_rate DESC, tip_id;
