-- Verify ctxgraph:table_tip_stats on pg

SELECT skill, tip_id, retrievals, scored, attempts, outcome_sum, weighted_sum, follow_known, followed, harm,
       last_retrieved_at, refreshed_at
  FROM ctxgraph.tip_stats WHERE FALSE;
SELECT 'ctxgraph.refresh_tip_stats(text, bigint[])'::regprocedure, 'ctxgraph._tip_log_aggregate(text, bigint)'::regprocedure;
-- Every skill partition of tip_retrievals carries the three statement triggers.
SELECT 1 / (count(*) = 0)::int
  FROM pg_catalog.pg_inherits AS i
 WHERE i.inhparent = 'ctxgraph.tip_retrievals'::regclass
   AND (SELECT count(*) FROM pg_catalog.pg_trigger AS t
         WHERE t.tgrelid = i.inhrelid AND t.tgname IN ('tip_stats_after_insert', 'tip_stats_after_update', 'tip_stats_after_delete')) <> 3;
-- The maintained figures equal a from-scratch aggregate of scored_retrievals, written through the
-- partition (rolled back): after an insert, an outcome, a follow verdict and a delete.
DO $$
DECLARE
    tip bigint;
    ids bigint[];
    s   ctxgraph.tip_stats;
BEGIN
    INSERT INTO stig.runs (id) VALUES ('verify-run');
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'verify tip') RETURNING id INTO tip;
    INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, outcome_value, retrieved_at)
    VALUES ('verify-run', tip, 'verify-rule', 1, 0.8, '2026-01-01 10:00+00'),
           ('verify-run', tip, 'verify-rule', 1, NULL, '2026-01-01 11:00+00'),
           ('verify-run', tip, 'verify-rule', 1, 1.0, '2026-01-01 12:00+00');
    ids := ARRAY(SELECT id FROM stig.tip_retrievals WHERE tip_id = tip ORDER BY id);
    UPDATE stig.tip_retrievals SET tip_followed_llm = true WHERE id = ids[1];
    DELETE FROM stig.tip_retrievals WHERE id = ids[3];
    SELECT * INTO s FROM ctxgraph.tip_stats WHERE skill = 'stig' AND tip_id = tip;
    IF (s.retrievals, s.scored, s.attempts, s.followed, s.last_retrieved_at)
       IS DISTINCT FROM (2::bigint, 1::bigint, 1::bigint, 1::bigint, '2026-01-01 11:00+00'::timestamptz)
       OR abs(s.outcome_sum - 0.8) > 1e-9
       OR abs(s.weighted_sum - 0.8 * ctxgraph.param('follow.weight.judge_followed')) > 1e-9 THEN
        RAISE EXCEPTION 'verify: tip_stats % does not match the log', row_to_json(s);
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
-- An UPDATE of follow_probability alone refreshes the tip: the figures follow the signal branch
-- (rolled back).
DO $$
DECLARE
    tip bigint;
    pt  double precision := ctxgraph.param('follow.probability_threshold');
    s   ctxgraph.tip_stats;
BEGIN
    INSERT INTO stig.runs (id) VALUES ('verify-run');
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'verify tip') RETURNING id INTO tip;
    INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, outcome_value, retrieved_at)
    VALUES ('verify-run', tip, 'verify-rule', 1, 1.0, '2026-01-01 10:00+00');
    UPDATE stig.tip_retrievals SET follow_probability = pt WHERE tip_id = tip;
    SELECT * INTO s FROM ctxgraph.tip_stats WHERE skill = 'stig' AND tip_id = tip;
    IF s.followed <> 1 OR s.follow_known <> 1 OR abs(s.weighted_sum - ctxgraph.param('follow.weight.signal_followed')) > 1e-9 THEN
        RAISE EXCEPTION 'verify: tip_stats % did not follow a follow_probability at the threshold', row_to_json(s);
    END IF;
    UPDATE stig.tip_retrievals SET follow_probability = pt / 2 WHERE tip_id = tip;
    SELECT * INTO s FROM ctxgraph.tip_stats WHERE skill = 'stig' AND tip_id = tip;
    IF s.followed <> 0 OR s.follow_known <> 1 OR abs(s.weighted_sum - ctxgraph.param('follow.weight.signal_ignored')) > 1e-9 THEN
        RAISE EXCEPTION 'verify: tip_stats % did not follow a follow_probability below the threshold', row_to_json(s);
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
