-- Verify ctxgraph:view_follow_anomalies on pg

SELECT skill, retrieval_id, run_id, rule_id, attempt_id, tip_id, body, tip_followed_llm, tip_followed_emb, kind
  FROM ctxgraph.follow_anomalies WHERE FALSE;
SELECT retrieval_id, run_id, rule_id, attempt_id, tip_id, body, tip_followed_llm, tip_followed_emb, kind
  FROM stig.follow_anomalies WHERE FALSE;
SELECT 1 / (COUNT(*) = 2)::int FROM ctxgraph.parameters WHERE name IN ('anomaly.low_cosine', 'anomaly.high_cosine');
SELECT 1 / (pg_catalog.has_table_privilege('ctxgraph_analyst', 'stig.follow_anomalies', 'SELECT')
            AND NOT pg_catalog.has_table_privilege('ctxgraph_ranker', 'ctxgraph.follow_anomalies', 'SELECT')
            AND NOT pg_catalog.has_table_privilege('ctxgraph_writer', 'ctxgraph.follow_anomalies', 'SELECT'))::int;

-- Behaviour, rolled back: of six probe rows around the anomaly.* thresholds in force, exactly
-- "judge followed, cosine just below low" and "judge ignored, cosine at high" are listed.
BEGIN;
DO $$
DECLARE
    run  text := 'sqitch-verify-' || gen_random_uuid();
    low  double precision := ctxgraph.param('anomaly.low_cosine');
    high double precision := ctxgraph.param('anomaly.high_cosine');
    tip  bigint;
    got  text[];
BEGIN
    INSERT INTO stig.tips (body) VALUES ('probe') RETURNING id INTO tip;
    INSERT INTO stig.runs (id) VALUES (run);
    INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, tip_followed_llm, tip_followed_emb)
    VALUES (run, tip, 'r', 1, true, low - 1e-6), (run, tip, 'r', 2, true, low), (run, tip, 'r', 3, false, high),
           (run, tip, 'r', 4, false, high - 1e-6), (run, tip, 'r', 5, NULL, -1), (run, tip, 'r', 6, false, 'NaN');
    got := ARRAY(SELECT r.rank || ':' || a.kind FROM stig.follow_anomalies AS a
                   JOIN ctxgraph.tip_retrievals AS r ON r.skill = 'stig' AND r.id = a.retrieval_id
                  WHERE a.run_id = run ORDER BY r.rank);
    IF got IS DISTINCT FROM ARRAY['1:judge followed, cosine near zero', '3:judge ignored, cosine high'] THEN
        RAISE EXCEPTION 'follow_anomalies listed %', got;
    END IF;
END
$$;
ROLLBACK;
