-- Verify ctxgraph:view_follow_anomalies on pg

SELECT skill, retrieval_id, run_id, rule_id, attempt_id, tip_id, body, tip_followed_llm, tip_followed_emb, kind
  FROM ctxgraph.follow_anomalies WHERE FALSE;
SELECT retrieval_id, kind FROM stig.follow_anomalies WHERE FALSE;
-- Behaviour, rolled back: a judged-followed row with a cosine of 0 is an anomaly, a NaN cosine is not.
DO $$
DECLARE
    tip bigint;
BEGIN
    INSERT INTO stig.runs (id) VALUES ('verify-run');
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'verify tip') RETURNING id INTO tip;
    INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, tip_followed_llm, tip_followed_emb)
    VALUES ('verify-run', tip, 'verify-rule', 1, true, 0.0), ('verify-run', tip, 'verify-rule', 2, true, 'NaN');
    IF (SELECT count(*) FROM ctxgraph.follow_anomalies WHERE tip_id = tip) <> 1 THEN
        RAISE EXCEPTION 'verify: follow_anomalies did not list exactly the stark disagreement';
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
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
    DELETE FROM ctxgraph.parameters WHERE name = 'anomaly.low_cosine';
    PERFORM count(q.*) FROM (SELECT kind FROM ctxgraph.follow_anomalies) AS q;
    RAISE EXCEPTION 'verify: answered without parameter anomaly.low_cosine';
EXCEPTION WHEN invalid_parameter_value THEN NULL;
END
$$;
