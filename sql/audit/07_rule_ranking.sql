-- Audit 7: one rule's tips as the ranker orders them, before (outcome-only hit rate, pre-DEF-27) and
-- after (follow-weighted hit rate). Run: psql -v skill=stig -v rule=<rule_id> -f sql/audit/07_rule_ranking.sql
-- Without -v rule it only says how to ask (`ctxgraph audit --rule RULE` sets rule).
\set ON_ERROR_STOP 1
\pset footer off
\pset format wrapped
\if :{?rule}
\echo '== Ranker order for' :'rule' '(skill' :skill ')'
-- section: ranking
SELECT outcome_rank AS before, follow_rank AS after, tip_id, round(outcome_hit_rate::numeric, 3) AS outcome_only,
       round(hit_rate::numeric, 3) AS hit_rate, round(follow_rate::numeric, 3) AS follow_rate, attempts, retired,
       body AS tip
  FROM ctxgraph.rule_ranking(:'skill', :'rule')
 ORDER BY follow_rank, tip_id;
\else
\echo '== Ranker order: set -v rule=<rule_id> to see one rule''s tips before and after'
\endif
