-- Verify ctxgraph:view_harmful_when_followed on pg

SELECT skill, tip_id, rule_id, body, attempts, followed_attempts, effect, effect_lower_bound, effect_upper_bound,
       co_followed_tips, outcome_hit_rate, hit_rate, follow_rate, retired, misleading_probability
  FROM ctxgraph.harmful_when_followed WHERE FALSE;
SELECT tip_id, misleading_probability FROM stig.harmful_when_followed WHERE FALSE;
SELECT 1 / has_table_privilege('ctxgraph_ranker', 'stig.harmful_when_followed', 'SELECT')::int;
SELECT 1 / (NOT has_table_privilege('ctxgraph_writer', 'stig.harmful_when_followed', 'SELECT'))::int;
-- Exactly the fitted tips whose misleading_probability is above blame.misleading_above.
SELECT 1 / ((SELECT count(*) FROM ctxgraph.harmful_when_followed)
            = (SELECT count(*) FROM ctxgraph.tip_effects
                WHERE misleading_probability > ctxgraph.param('blame.misleading_above')))::int;
