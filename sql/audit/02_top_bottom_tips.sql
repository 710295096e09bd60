-- Audit 2: top and bottom tips by follow-weighted utility (utility_lower_bound ranks tips with few
-- attempts below proven ones). Run: psql -v skill=stig -f sql/audit/02_top_bottom_tips.sql
-- Optional: -v top=N rows per table (default 15; `ctxgraph audit --top N`).
\set ON_ERROR_STOP 1
\pset footer off
\pset format wrapped
\if :{?top}
\else
\set top 15
\endif
\echo '== Top tips (skill' :skill ')'
-- section: top
SELECT h.tip_id, h.rule_id, round(h.hit_rate::numeric, 3) AS hit_rate,
       round(h.utility_lower_bound::numeric, 3) AS lower_bound,
       round(h.outcome_hit_rate::numeric, 3) AS outcome_only, round(h.follow_rate::numeric, 3) AS follow_rate,
       h.attempts, t.body AS tip
  FROM ctxgraph.tip_hit_rates AS h
  JOIN ctxgraph.tips AS t ON t.skill = h.skill AND t.id = h.tip_id
 WHERE h.skill = :'skill' AND h.scored > 0 AND NOT h.retired
 ORDER BY h.utility_lower_bound DESC NULLS LAST, h.hit_rate DESC, h.tip_id
 LIMIT :'top'::integer;
\echo '== Bottom tips'
-- section: bottom
SELECT h.tip_id, h.rule_id, round(h.hit_rate::numeric, 3) AS hit_rate,
       round(h.outcome_hit_rate::numeric, 3) AS outcome_only, round(h.follow_rate::numeric, 3) AS follow_rate,
       h.harm, h.attempts, h.retired, t.body AS tip
  FROM ctxgraph.tip_hit_rates AS h
  JOIN ctxgraph.tips AS t ON t.skill = h.skill AND t.id = h.tip_id
 WHERE h.skill = :'skill' AND h.scored > 0
 ORDER BY h.hit_rate ASC NULLS LAST, h.outcome_hit_rate DESC, h.tip_id
 LIMIT :'top'::integer;
