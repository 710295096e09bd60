-- Verify ctxgraph:table_tip_stats on pg

SELECT skill, tip_id, retrievals, scored, attempts, outcome_sum, weighted_sum, follow_known, followed, harm,
       last_retrieved_at, refreshed_at
  FROM ctxgraph.tip_stats WHERE FALSE;
SELECT 'ctxgraph.refresh_tip_stats(text, bigint[])'::regprocedure;

-- The statement triggers, on the parents and on every skill partition of tip_retrievals
-- (statements aimed at stig.tip_retrievals fire the partition's triggers, not the parent's).
SELECT 1 / (COUNT(*) = 6)::int FROM pg_catalog.pg_trigger
 WHERE (tgrelid, tgname) IN (('ctxgraph.tip_retrievals'::regclass, 'tip_stats_after_insert'),
                             ('ctxgraph.tip_retrievals'::regclass, 'tip_stats_after_update'),
                             ('ctxgraph.tip_retrievals'::regclass, 'tip_stats_after_delete'),
                             ('ctxgraph.attempts'::regclass, 'tip_stats_after_update'),
                             ('ctxgraph.failure_modes'::regclass, 'tip_stats_after_update'),
                             ('ctxgraph.parameters'::regclass, 'tip_stats_after_update'));
SELECT 1 / (COUNT(*) = 0)::int
  FROM pg_catalog.pg_inherits AS i
 WHERE i.inhparent = 'ctxgraph.tip_retrievals'::regclass
   AND (SELECT count(*) FROM pg_catalog.pg_trigger AS t
         WHERE t.tgrelid = i.inhrelid
           AND t.tgname IN ('tip_stats_after_insert', 'tip_stats_after_update', 'tip_stats_after_delete')) <> 3;

-- Only the owner maintains the aggregates; analysts read them.
SELECT 1 / (pg_catalog.has_table_privilege('ctxgraph_analyst', 'ctxgraph.tip_stats', 'SELECT')
            AND NOT pg_catalog.has_table_privilege('ctxgraph_writer', 'ctxgraph.tip_stats', 'SELECT, INSERT, UPDATE, DELETE')
            AND NOT pg_catalog.has_function_privilege('ctxgraph_writer', 'ctxgraph.refresh_tip_stats(text, bigint[])', 'EXECUTE')
            AND NOT pg_catalog.has_function_privilege('public', 'ctxgraph.refresh_tip_stats(text, bigint[])', 'EXECUTE'))::int;

-- Behaviour, rolled back: the ordinary write path (log, save, link, record, score) and a plain
-- INSERT into the partition keep one probe tip's stats exact, step by step.
BEGIN;
DO $$
DECLARE
    run  text := 'sqitch-verify-' || gen_random_uuid();
    tip  bigint;
    r1   bigint[];
    r2   bigint[];
    a1   bigint;
    a2   bigint;
    c    double precision := ctxgraph.param('outcome.confidence');
    g1   double precision;
    g2   double precision;
    fw   double precision := ctxgraph.follow_weight(true, NULL);
    s    ctxgraph.tip_stats%ROWTYPE;
BEGIN
    INSERT INTO stig.tips (rule_id, body) VALUES ('sqitch_verify_rule', 'probe') RETURNING id INTO tip;
    r1 := ARRAY(SELECT ctxgraph.log_retrievals('stig', run, 'sqitch_verify_rule', ARRAY[tip], ARRAY[0.5], '2026-01-01 10:00Z'));
    r2 := ARRAY(SELECT ctxgraph.log_retrievals('stig', run, 'sqitch_verify_rule', ARRAY[tip], ARRAY[0.5], '2026-01-01 11:00Z'));
    SELECT * INTO s FROM ctxgraph.tip_stats AS t WHERE t.skill = 'stig' AND t.tip_id = tip;
    IF s.retrievals IS DISTINCT FROM 2::bigint OR s.scored <> 0 OR s.last_retrieved_at <> '2026-01-01 11:00Z' THEN
        RAISE EXCEPTION 'tip_stats after logging: %', s;
    END IF;

    a1 := ctxgraph.save_attempt('stig', run, 'sqitch_verify_rule', 1);
    a2 := ctxgraph.save_attempt('stig', run, 'sqitch_verify_rule', 2);
    PERFORM ctxgraph.update_retrieval_attempt_ids('stig', r1, a1);
    PERFORM ctxgraph.update_retrieval_attempt_ids('stig', r2, a2);
    PERFORM ctxgraph.record_outcome('stig', a1, true);
    PERFORM ctxgraph.record_outcome('stig', a2, false, 'health_failure');
    UPDATE stig.tip_retrievals SET tip_followed_llm = true WHERE id = ANY (r1 || r2);
    INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, retrieved_at)
    VALUES (run, tip, 'sqitch_verify_rule', 1, '2026-01-01 12:00Z');

    g1 := ctxgraph.graded_outcome('stig', true, 1);
    g2 := ctxgraph.graded_outcome('stig', false, 2, 'health_failure');
    SELECT * INTO s FROM ctxgraph.tip_stats AS t WHERE t.skill = 'stig' AND t.tip_id = tip;
    IF NOT (s.retrievals = 3 AND s.scored = 2 AND s.attempts = 2
            AND abs(s.outcome_sum - (g1 + g2) * c) < 1e-9
            AND abs(s.weighted_sum - (g1 + g2) * c * fw) < 1e-9
            AND s.follow_known = 2 AND s.followed = 2
            AND s.harm = (SELECT is_harm::int FROM ctxgraph.failure_modes WHERE name = 'health_failure')
            AND s.last_retrieved_at = '2026-01-01 12:00Z') IS TRUE THEN
        RAISE EXCEPTION 'tip_stats is not the aggregate of the log: % (outcomes %, %, confidence %, weight %)', s, g1, g2, c, fw;
    END IF;

    DELETE FROM stig.tip_retrievals WHERE id = ANY (r2);
    SELECT * INTO s FROM ctxgraph.tip_stats AS t WHERE t.skill = 'stig' AND t.tip_id = tip;
    IF NOT (s.retrievals = 2 AND s.scored = 1 AND s.attempts = 1 AND s.harm = 0) IS TRUE THEN
        RAISE EXCEPTION 'tip_stats after a delete: %', s;
    END IF;
END
$$;
ROLLBACK;
