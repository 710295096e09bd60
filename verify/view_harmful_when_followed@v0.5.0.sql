-- Verify ctxgraph:view_harmful_when_followed on pg

SELECT skill, tip_id, rule_id, body, attempts, followed_attempts, effect, effect_lower_bound, effect_upper_bound,
       co_followed_tips, outcome_hit_rate, hit_rate, follow_rate, retired
  FROM ctxgraph.harmful_when_followed WHERE FALSE;
SELECT tip_id, effect_upper_bound FROM stig.harmful_when_followed WHERE FALSE;
SELECT 1 / has_table_privilege('ctxgraph_ranker', 'stig.harmful_when_followed', 'SELECT')::int;
-- Exactly the fitted effects whose upper bound is below effects.harmful_below.
SELECT 1 / ((SELECT count(*) FROM ctxgraph.harmful_when_followed)
            = (SELECT count(*) FROM ctxgraph.tip_effects WHERE upper_bound < ctxgraph.param('effects.harmful_below')))::int;
