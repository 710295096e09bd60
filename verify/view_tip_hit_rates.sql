-- Verify ctxgraph:view_tip_hit_rates on pg

SELECT skill, tip_id, rule_id, retrievals, scored, attempts, outcome_hit_rate, hit_rate, follow_rate, harm,
       utility_lower_bound, last_retrieved_at, retired, retired_at
  FROM ctxgraph.tip_hit_rates WHERE FALSE;
SELECT tip_id, rule_id, retrievals, scored, attempts, outcome_hit_rate, hit_rate, follow_rate, harm,
       utility_lower_bound, last_retrieved_at, retired, retired_at
  FROM stig.tip_hit_rates WHERE FALSE;
SELECT 1 / has_table_privilege('ctxgraph_ranker', 'stig.tip_hit_rates', 'SELECT')::int;
-- One row per tip, and the rates are the maintained sums over scored retrievals.
SELECT 1 / ((SELECT count(*) FROM ctxgraph.tip_hit_rates) = (SELECT count(*) FROM ctxgraph.tips))::int;
SELECT 1 / (count(*) = 0)::int
  FROM ctxgraph.tip_hit_rates AS h
  JOIN ctxgraph.tip_stats AS s ON s.skill = h.skill AND s.tip_id = h.tip_id
 WHERE s.scored > 0 AND abs(h.hit_rate - s.weighted_sum / s.scored) > 1e-9;
-- A missing parameter is an error, never a silent answer (rolled back; one judged row so that
-- the parameter is needed).
DO $$
DECLARE
    tip bigint;
BEGIN
    INSERT INTO stig.runs (id) VALUES ('verify-param-run');
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'verify tip') RETURNING id INTO tip;
    INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, outcome_value, tip_followed_llm, tip_followed_emb)
    SELECT 'verify-param-run', tip, 'verify-rule', g, 1.0, true, 0.0 FROM generate_series(1, 5) AS g;
    DELETE FROM ctxgraph.parameters WHERE name = 'utility.bound_z';
    PERFORM count(q.*) FROM (SELECT utility_lower_bound FROM ctxgraph.tip_hit_rates) AS q;
    RAISE EXCEPTION 'verify: answered without parameter utility.bound_z';
EXCEPTION WHEN invalid_parameter_value THEN NULL;
END
$$;
-- The effect columns (this rework) are the fitted effects'.
SELECT effect, effect_lower_bound, effect_upper_bound FROM ctxgraph.tip_hit_rates WHERE FALSE;
SELECT tip_id, hit_rate, effect, effect_lower_bound, effect_upper_bound FROM stig.tip_hit_rates WHERE FALSE;
SELECT 1 / (count(*) = 0)::int
  FROM ctxgraph.tip_hit_rates AS h
  JOIN ctxgraph.tip_effects AS e ON e.skill = h.skill AND e.tip_id = h.tip_id
 WHERE h.effect IS DISTINCT FROM e.effect OR h.effect_upper_bound IS DISTINCT FROM e.upper_bound;
