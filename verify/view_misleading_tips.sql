-- Verify ctxgraph:view_misleading_tips on pg

SELECT skill, tip_id, rule_id, body, attempts, outcome_hit_rate, hit_rate, follow_rate, credit_gap, retired
  FROM ctxgraph.misleading_tips WHERE FALSE;
SELECT tip_id, rule_id, body, attempts, outcome_hit_rate, hit_rate, follow_rate, credit_gap, retired
  FROM stig.misleading_tips WHERE FALSE;
SELECT 1 / has_table_privilege('ctxgraph_ranker', 'stig.misleading_tips', 'SELECT')::int;
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
    DELETE FROM ctxgraph.parameters WHERE name = 'misleading.min_attempts';
    PERFORM count(q.*) FROM (SELECT tip_id FROM ctxgraph.misleading_tips) AS q;
    RAISE EXCEPTION 'verify: answered without parameter misleading.min_attempts';
EXCEPTION WHEN invalid_parameter_value THEN NULL;
END
$$;
