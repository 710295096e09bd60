-- scored_retrievals takes each row's follow coefficient from a join of ctxgraph.parameters, not
-- from a ctxgraph.param() call per row (a PL/pgSQL function running a query each time, most of
-- the cost of every read of the log's weights). track_functions counts the calls of this
-- transaction in pg_stat_xact_user_functions without waiting for a stats flush.
BEGIN;
SELECT plan(5);

-- One attempt that passed, 40 rows of one tip through every branch of the follow rule: judged
-- either way, a probability either side of its threshold, a cosine either side of its, nothing.
CREATE TEMP TABLE reads_fixture AS
WITH tip AS (
    INSERT INTO ctxgraph.tips (skill, rule_id, body) VALUES ('stig', 'reads-rule', 'reads tip') RETURNING id
)
SELECT (SELECT id FROM tip) AS tip_id,
       ctxgraph.save_attempt('stig', 'reads-run', 'reads-rule', 1, NULL, '2026-01-01 10:00+00') AS attempt_id;
UPDATE ctxgraph.attempts SET passed = true
 WHERE skill = 'stig' AND id = (SELECT attempt_id FROM reads_fixture);
INSERT INTO ctxgraph.tip_retrievals (skill, run_id, attempt_id, tip_id, rule_id, rank, outcome_value, outcome_confidence,
                                     tip_followed_llm, tip_followed_emb, follow_probability, retrieved_at)
SELECT 'stig', 'reads-run', f.attempt_id, f.tip_id, 'reads-rule', g, 1.0, 1.0,
       CASE g % 7 WHEN 0 THEN true WHEN 1 THEN false END,
       CASE WHEN g % 7 IN (4, 5) THEN (g % 7 - 4) * 0.9 END,
       CASE g % 7 WHEN 2 THEN 0.99 WHEN 3 THEN 0.01 END,
       '2026-01-01 10:00+00'
  FROM reads_fixture AS f, generate_series(1, 40) AS g;

SET LOCAL track_functions = 'pl';
CREATE FUNCTION pg_temp.param_calls() RETURNS bigint LANGUAGE sql AS $$
    SELECT coalesce((SELECT f.calls FROM pg_catalog.pg_stat_xact_user_functions AS f
                      WHERE f.funcid = 'ctxgraph.param(text)'::regprocedure), 0)
$$;
SELECT is((SELECT count(DISTINCT follow_decision) FROM ctxgraph.scored_retrievals WHERE skill = 'stig')::integer, 7,
          'the log holds a row of each of the follow rule''s seven branches');

CREATE TEMP TABLE calls_before AS SELECT pg_temp.param_calls() AS n;
CREATE TEMP TABLE weights_read AS
SELECT s.retrieval_id, s.follow_decision, s.follow_weight FROM ctxgraph.scored_retrievals AS s WHERE s.skill = 'stig';
-- The thresholds are read by ctxgraph.param once per copy of the follow rule in the plan (two or
-- four calls); a call per row would make it 40 more.
SELECT cmp_ok(pg_temp.param_calls() - (SELECT n FROM calls_before), '<', 10::bigint,
              'reading 40 rows'' follow_weight calls ctxgraph.param a few times a query, not once a row');

SELECT is((SELECT count(*) FROM weights_read AS w
            WHERE w.follow_weight IS DISTINCT FROM ctxgraph.param('follow.weight.' || w.follow_decision))::integer, 0,
          'every row''s follow_weight is its branch''s coefficient');
SELECT is((SELECT count(*) FROM weights_read)::integer,
          (SELECT count(*) FROM ctxgraph.tip_retrievals WHERE skill = 'stig' AND outcome_value IS NOT NULL)::integer,
          'the join keeps every retrieval with an outcome once');

-- A changed coefficient is read by the next query, as through ctxgraph.param.
UPDATE ctxgraph.parameters SET value = 0.25 WHERE name = 'follow.weight.unscored';
SELECT is((SELECT count(*) FROM ctxgraph.scored_retrievals AS s
            WHERE s.skill = 'stig' AND s.follow_decision = 'unscored' AND s.follow_weight <> 0.25)::integer, 0,
          'a changed coefficient is what the next read shows');

SELECT * FROM finish();
ROLLBACK;
