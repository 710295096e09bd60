-- Audit 4 (ADR-0019 section 4): the misleading-tip detector, tips that outcome-only credit calls
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

-- Beside it, a different question: which tips fail the attempts that follow them, the tips
-- followed with them and the rule's pass rate explained away (ctxgraph.tip_effects, refitted at
-- the end of every scoring pass). Threshold: blame.misleading_above on misleading_probability.
\echo '== Harmful when followed (skill' :skill ')'
-- section: harmful_when_followed
SELECT tip_id, rule_id, round(misleading_probability::numeric, 3) AS misleading_probability,
       round(effect::numeric, 3) AS effect, round(effect_lower_bound::numeric, 3) AS lower_bound,
       round(effect_upper_bound::numeric, 3) AS upper_bound, co_followed_tips, attempts,
       round(followed_attempts::numeric, 1) AS followed, round(hit_rate::numeric, 3) AS hit_rate, retired,
       body AS tip
  FROM ctxgraph.harmful_when_followed
 WHERE skill = :'skill'
 ORDER BY misleading_probability DESC, tip_id;
