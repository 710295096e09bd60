-- Deploy ctxgraph:function_rule_ranking to pg
-- requires: function_rule_ranking@v0.5.0
-- requires: function_write_checks

-- Rework: a NULL skill or rule (22004) and an unknown skill (22023) raise; released, each answered
-- with no rows, as for a rule that has no tips yet. Owner's rights as before (the ranker cannot
-- read the raw log its candidates come from). Same arguments, same result columns.
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph.rule_ranking(skill text, rule_id text)
RETURNS TABLE (
    tip_id bigint, tip_rule_id text, body text, retrievals bigint, attempts bigint,
    outcome_hit_rate double precision, hit_rate double precision, follow_rate double precision,
    utility_lower_bound double precision, outcome_rank bigint, follow_rank bigint, retired boolean
)
LANGUAGE sql STABLE
-- Owner's rights: candidates come from the raw log, which the ranker may not read.
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
    -- An empty answer must mean "no tips for this rule", never a skill that does not exist.
    SELECT ctxgraph._require_skill(rule_ranking.skill);
    -- _raise_problem is IMMUTABLE: with constant arguments only, the planner would run it (and
    -- raise) while planning; the message names the skill, so it runs only for a NULL rule.
    SELECT ctxgraph._raise_problem('22004', format('ctxgraph: rule_ranking(%L) needs a rule_id', rule_ranking.skill), NULL)
     WHERE rule_ranking.rule_id IS NULL;
    WITH candidates AS (
        SELECT t.id FROM ctxgraph.tips AS t
         WHERE t.skill = rule_ranking.skill AND t.rule_id = rule_ranking.rule_id
        UNION
        SELECT DISTINCT r.tip_id FROM ctxgraph.tip_retrievals AS r
         WHERE r.skill = rule_ranking.skill AND r.rule_id = rule_ranking.rule_id
    )
    SELECT h.tip_id, h.rule_id, t.body, h.retrievals, h.attempts, h.outcome_hit_rate, h.hit_rate, h.follow_rate,
           h.utility_lower_bound,
           rank() OVER (ORDER BY h.outcome_hit_rate DESC NULLS LAST),
           rank() OVER (ORDER BY h.retired, h.hit_rate DESC NULLS LAST, h.utility_lower_bound DESC NULLS LAST),
           h.retired
      FROM candidates AS c
      JOIN ctxgraph.tip_hit_rates AS h ON h.skill = rule_ranking.skill AND h.tip_id = c.id
      JOIN ctxgraph.tips AS t ON t.skill = h.skill AND t.id = h.tip_id
     ORDER BY 11, 10, h.tip_id
$$;

COMMIT;
