-- Verify ctxgraph:view_run_overview on pg

SELECT skill, run_id, attempts, rules, retrievals, with_outcome, scored, unscored, judge_verdicts, cosines,
       followed, first_retrieval, last_retrieval
  FROM ctxgraph.run_overview WHERE FALSE;
SELECT skill, run_id, leg, reason, retrievals FROM ctxgraph.scoring_null_reasons WHERE FALSE;
SELECT run_id, attempts, rules, retrievals, with_outcome, scored, unscored, judge_verdicts, cosines,
       followed, first_retrieval, last_retrieval
  FROM stig.run_overview WHERE FALSE;
SELECT run_id, leg, reason, retrievals FROM stig.scoring_null_reasons WHERE FALSE;
SELECT 1 / (pg_catalog.has_table_privilege('ctxgraph_analyst', 'stig.run_overview', 'SELECT')
            AND pg_catalog.has_table_privilege('ctxgraph_analyst', 'stig.scoring_null_reasons', 'SELECT')
            AND NOT pg_catalog.has_table_privilege('ctxgraph_ranker', 'ctxgraph.run_overview', 'SELECT')
            AND NOT pg_catalog.has_table_privilege('ctxgraph_writer', 'ctxgraph.scoring_null_reasons', 'SELECT'))::int;

-- Behaviour, rolled back: a probe run of four retrievals over two rules, one linked attempt
-- with an outcome, and per-row scoring states is summarised exactly; the NULL follow columns
-- are explained by the scorer's recorded statuses.
BEGIN;
DO $$
DECLARE
    run text := 'sqitch-verify-' || gen_random_uuid();
    t   double precision := ctxgraph.param('follow.emb_threshold');
    tip bigint;
    ids bigint[];
    a   bigint;
    o   record;
    got text[];
BEGIN
    INSERT INTO stig.tips (body) VALUES ('probe') RETURNING id INTO tip;
    ids := ARRAY(SELECT ctxgraph.log_retrievals('stig', run, 'rule_a', ARRAY[tip], ARRAY[0.5], '2026-01-01 10:00Z'))
        || ARRAY(SELECT ctxgraph.log_retrievals('stig', run, 'rule_a', ARRAY[tip], ARRAY[0.5], '2026-01-01 10:10Z'))
        || ARRAY(SELECT ctxgraph.log_retrievals('stig', run, 'rule_b', ARRAY[tip], ARRAY[0.5], '2026-01-01 10:20Z'))
        || ARRAY(SELECT ctxgraph.log_retrievals('stig', run, 'rule_b', ARRAY[tip], ARRAY[0.5], '2026-01-01 10:30Z'));
    a := ctxgraph.save_attempt('stig', run, 'rule_a', 1);
    PERFORM ctxgraph.update_retrieval_attempt_ids('stig', ids[1:2], a);
    PERFORM ctxgraph.record_outcome('stig', a, true);
    -- row 1: judge followed; row 2: no verdict, cosine at the threshold; row 3: no verdict, NaN;
    -- row 4: not scored yet.
    UPDATE stig.tip_retrievals AS r
       SET tip_followed_llm = v.llm, tip_followed_emb = v.emb, tip_followed_computed_at = now()
      FROM (VALUES (ids[1], true, NULL::float8), (ids[2], NULL, t), (ids[3], NULL, 'NaN')) AS v (id, llm, emb)
     WHERE r.id = v.id;
    INSERT INTO ctxgraph.retrieval_scores (skill, retrieval_id, llm_status, emb_status)
    VALUES ('stig', ids[1], 'judged', 'no_script'), ('stig', ids[2], 'timeout', 'computed'),
           ('stig', ids[3], 'timeout', 'nan');

    SELECT * INTO o FROM stig.run_overview AS v WHERE v.run_id = run;
    IF NOT (o.attempts = 1 AND o.rules = 2 AND o.retrievals = 4 AND o.with_outcome = 2 AND o.scored = 3
            AND o.unscored = 1 AND o.judge_verdicts = 1 AND o.cosines = 1 AND o.followed = 2
            AND o.first_retrieval = '2026-01-01 10:00Z' AND o.last_retrieval = '2026-01-01 10:30Z') IS TRUE THEN
        RAISE EXCEPTION 'run_overview of the probe run: %', o;
    END IF;
    got := ARRAY(SELECT v.leg || ':' || v.reason || ':' || v.retrievals FROM stig.scoring_null_reasons AS v
                  WHERE v.run_id = run ORDER BY 1);
    IF got IS DISTINCT FROM ARRAY['embedding:no_script:1', 'judge:timeout:2'] THEN
        RAISE EXCEPTION 'scoring_null_reasons of the probe run: %', got;
    END IF;
END
$$;
ROLLBACK;
