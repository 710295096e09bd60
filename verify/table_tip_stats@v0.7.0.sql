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
-- Delta maintenance: the pair table's contract, and both levels equal to their from-scratch
-- definitions after inserts, an attempt linked and scored, a follow verdict, a failure mode
-- changed, a row moved to another tip and a delete (rolled back).
SELECT skill, tip_id, attempt_key, rule_id, run_id, scored, outcome_sum, weighted_sum, weight_sum, follow_known,
       followed, harm, harmful, retrieved_max
  FROM ctxgraph.tip_attempt_stats WHERE FALSE;
SELECT skill, tip_id, rule_id, units, followed_n, followed_sum, harm_n FROM ctxgraph.tip_rule_stats WHERE FALSE;
SELECT skill, tip_id, run_id, units FROM ctxgraph.tip_run_stats WHERE FALSE;
SELECT skill, attempt_key, rule_id, units, outcome_sum, harmful FROM ctxgraph.rule_attempt_stats WHERE FALSE;
SELECT skill, rule_id, attempts, outcome_sum, harmful_attempts FROM ctxgraph.rule_stats WHERE FALSE;
SELECT runs, evidence_version FROM ctxgraph.tip_stats WHERE FALSE;
SELECT 'ctxgraph._tip_stats_apply(text, bigint[], bigint[], integer[], timestamptz[], boolean[])'::regprocedure,
       'ctxgraph._rule_stats_apply(text, bigint[])'::regprocedure,
       'ctxgraph._tip_stats_lock(text, bigint[])'::regprocedure,
       'ctxgraph._tip_stats_rebuild(text, bigint[])'::regprocedure,
       'ctxgraph._tip_pair_aggregate(text, bigint, bigint)'::regprocedure;
DO $$
DECLARE
    tip   bigint;
    other bigint;
    att   bigint;
    ids   bigint[];
    bad   text;
BEGIN
    INSERT INTO stig.runs (id) VALUES ('verify-run');
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'verify tip') RETURNING id INTO tip;
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'verify other tip') RETURNING id INTO other;
    INSERT INTO stig.attempts (run_id, rule_id, attempt_number, started_at)
    VALUES ('verify-run', 'verify-rule', 1, '2026-01-01 10:00+00') RETURNING id INTO att;
    INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, outcome_value, retrieved_at)
    VALUES ('verify-run', tip, 'verify-rule', 1, NULL, '2026-01-01 10:00+00'),
           ('verify-run', other, 'verify-rule', 2, NULL, '2026-01-01 10:00+00'),
           ('verify-run', tip, 'verify-rule', 1, 0.5, '2026-01-01 09:00+00');
    ids := ARRAY(SELECT id FROM stig.tip_retrievals WHERE tip_id IN (tip, other) ORDER BY id);
    UPDATE stig.tip_retrievals SET attempt_id = att WHERE id = ANY (ids[1:2]);
    UPDATE stig.tip_retrievals SET outcome_value = -0.2, outcome_confidence = 1.0 WHERE id = ANY (ids[1:2]);
    UPDATE stig.tip_retrievals SET tip_followed_llm = true WHERE id = ANY (ids[1:2]);
    UPDATE stig.attempts SET failure_mode = 'health_failure' WHERE id = att;
    UPDATE stig.tip_retrievals SET tip_id = other WHERE id = ids[3];
    SELECT string_agg(format('pair (%s, %s)', x.tip_id, x.attempt_key), ', ') INTO bad
      FROM (SELECT a.tip_id, a.attempt_key, a.rule_id, a.run_id, a.scored, a.outcome_sum, a.weighted_sum,
                   a.weight_sum, a.follow_known, a.followed, a.harm, a.harmful, a.retrieved_max
              FROM ctxgraph.tip_attempt_stats AS a WHERE a.skill = 'stig' AND a.tip_id IN (tip, other)
            EXCEPT
            SELECT s.tip_id, s.attempt_key, p.*
              FROM (SELECT DISTINCT tip_id, attempt_key FROM ctxgraph.scored_retrievals
                     WHERE skill = 'stig' AND tip_id IN (tip, other)) AS s
             CROSS JOIN LATERAL ctxgraph._tip_pair_aggregate('stig', s.tip_id, s.attempt_key) AS p) AS x;
    IF bad IS NOT NULL OR (SELECT count(*) FROM ctxgraph.tip_attempt_stats WHERE skill = 'stig' AND tip_id IN (tip, other)) <> 3
    THEN
        RAISE EXCEPTION 'verify: tip_attempt_stats differs from scored_retrievals: %', coalesce(bad, 'row count');
    END IF;
    DELETE FROM stig.tip_retrievals WHERE id = ids[1];
    SELECT string_agg(x.tip_id::text, ', ') INTO bad
      FROM (SELECT s.tip_id, s.retrievals, s.scored, s.attempts, round(s.outcome_sum::numeric, 9),
                   round(s.weighted_sum::numeric, 9), s.follow_known, s.followed, s.harm, s.last_retrieved_at
              FROM ctxgraph.tip_stats AS s WHERE s.skill = 'stig' AND s.tip_id IN (tip, other)
            EXCEPT
            SELECT t.id, a.retrievals, a.scored, a.attempts, round(a.outcome_sum::numeric, 9),
                   round(a.weighted_sum::numeric, 9), a.follow_known, a.followed, a.harm, a.last_retrieved_at
              FROM stig.tips AS t CROSS JOIN LATERAL ctxgraph._tip_log_aggregate('stig', t.id) AS a
             WHERE t.id IN (tip, other)) AS x;
    IF bad IS NOT NULL OR EXISTS (SELECT 1 FROM ctxgraph.tip_attempt_stats WHERE skill = 'stig' AND tip_id = tip) THEN
        RAISE EXCEPTION 'verify: tip_stats moved by deltas differs from the log for tips %', coalesce(bad, tip::text);
    END IF;
    -- Left: `other` in the attempt (health failure, judged followed, -0.2) and alone as a legacy row
    -- (0.5, no verdict: follow.weight.unscored). One rule, one run, two attempts.
    IF (SELECT (units, round(followed_n::numeric, 9), round(followed_sum::numeric, 9), round(harm_n::numeric, 9))
          FROM ctxgraph.tip_rule_stats WHERE skill = 'stig' AND tip_id = other)
       IS DISTINCT FROM (2::bigint,
                         round((ctxgraph.param('follow.weight.judge_followed') + ctxgraph.param('follow.weight.unscored'))::numeric, 9),
                         round((-0.2 * ctxgraph.param('follow.weight.judge_followed')
                                + 0.5 * ctxgraph.param('follow.weight.unscored'))::numeric, 9),
                         round(ctxgraph.param('follow.weight.judge_followed')::numeric, 9))
       OR (SELECT runs FROM ctxgraph.tip_stats WHERE skill = 'stig' AND tip_id = other) <> 1
       OR (SELECT (attempts, round(outcome_sum::numeric, 9), harmful_attempts) FROM ctxgraph.rule_stats
            WHERE skill = 'stig' AND rule_id = 'verify-rule') IS DISTINCT FROM (2::bigint, 0.3::numeric, 1::bigint)
    THEN
        RAISE EXCEPTION 'verify: tip_rule_stats, tip_stats.runs or rule_stats differ from the log';
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;

-- TRUNCATE: the trigger is on the parent and on every skill's partition, and a truncated log
-- leaves its skill's levels as a rebuild from what is left (rolled back, on a skill made for it;
-- the CASCADE reaches retrieval_scores, whose rows come back with the rollback).
SELECT 1 / (count(*) = 1 + (SELECT count(*) FROM ctxgraph.skills))::int
  FROM pg_catalog.pg_trigger AS t
 WHERE t.tgname = 'tip_stats_after_truncate' AND NOT t.tgisinternal AND t.tgenabled = 'O'
   AND t.tgfoid = 'ctxgraph._tip_stats_after_retrievals_truncate()'::regprocedure
   AND (t.tgrelid = 'ctxgraph.tip_retrievals'::regclass
        OR t.tgrelid IN (SELECT i.inhrelid FROM pg_catalog.pg_inherits AS i
                          WHERE i.inhparent = 'ctxgraph.tip_retrievals'::regclass));
DO $$
DECLARE
    tip     bigint;
    attempt bigint;
BEGIN
    PERFORM ctxgraph.add_skill('verify_truncate', 'binary');
    INSERT INTO ctxgraph.tips (skill, rule_id, body) VALUES ('verify_truncate', 'verify-rule', 'verify tip') RETURNING id INTO tip;
    attempt := ctxgraph.save_attempt('verify_truncate', 'verify-run', 'verify-rule', 1);
    PERFORM ctxgraph.update_retrieval_attempt_ids('verify_truncate',
                ARRAY(SELECT ctxgraph.log_retrievals('verify_truncate', 'verify-run', 'verify-rule', ARRAY[tip], ARRAY[0.9])),
                attempt);
    PERFORM ctxgraph.record_outcome('verify_truncate', attempt, true);
    IF (SELECT scored FROM ctxgraph.tip_stats WHERE skill = 'verify_truncate' AND tip_id = tip) IS DISTINCT FROM 1::bigint THEN
        RAISE EXCEPTION 'verify: the probe''s retrieval was not counted';
    END IF;
    TRUNCATE verify_truncate.tip_retrievals CASCADE;
    IF (SELECT (retrievals, scored, attempts, runs) FROM ctxgraph.tip_stats WHERE skill = 'verify_truncate' AND tip_id = tip)
           IS DISTINCT FROM (0::bigint, 0::bigint, 0::bigint, 0::bigint)
       OR EXISTS (SELECT 1 FROM ctxgraph.tip_attempt_stats WHERE skill = 'verify_truncate')
       OR EXISTS (SELECT 1 FROM ctxgraph.rule_attempt_stats WHERE skill = 'verify_truncate')
       OR EXISTS (SELECT 1 FROM ctxgraph.rule_stats WHERE skill = 'verify_truncate' AND attempts <> 0) THEN
        RAISE EXCEPTION 'verify: TRUNCATE of the log left stale maintained levels';
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
