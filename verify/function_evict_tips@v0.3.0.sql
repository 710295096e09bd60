-- Verify ctxgraph:function_evict_tips on pg

SELECT 'ctxgraph.evict_tips(text, timestamptz, boolean)'::regprocedure;
SELECT 'ctxgraph.restore_tip(text, bigint, timestamptz)'::regprocedure;
-- Owner's rights with a pinned search_path, executable by the writer only.
SELECT 1 / (COUNT(*) = 2)::int FROM pg_catalog.pg_proc
 WHERE oid IN ('ctxgraph.evict_tips(text, timestamptz, boolean)'::regprocedure,
               'ctxgraph.restore_tip(text, bigint, timestamptz)'::regprocedure)
   AND prosecdef AND proconfig @> ARRAY['search_path=pg_catalog, ctxgraph, pg_temp']
   AND pg_catalog.has_function_privilege('ctxgraph_writer', oid, 'EXECUTE')
   AND NOT pg_catalog.has_function_privilege('ctxgraph_ranker', oid, 'EXECUTE')
   AND NOT pg_catalog.has_function_privilege('ctxgraph_analyst', oid, 'EXECUTE')
   AND NOT pg_catalog.has_function_privilege('public', oid, 'EXECUTE');

-- Behaviour, rolled back: a tip followed in 3 clean failures (3 runs) on a rule whose other
-- attempts pass. The dry run reports it (exactly when tip_evidence gives a reason, as with the
-- default parameters) and changes nothing; the real run retires and logs it; restore_tip undoes
-- that once; the documented errors are raised.
BEGIN;
DO $$
DECLARE
    run     text := 'sqitch-verify-' || gen_random_uuid();
    rule    text := 'sqitch_verify_rule_' || gen_random_uuid();
    as_of   timestamptz := now();
    bad     bigint;
    ids     bigint[];
    a       bigint;
    i       integer;
    expected text;
    good    bigint;
    got     record;
    restored boolean;
    probe   record;
BEGIN
    INSERT INTO stig.tips (rule_id, body) VALUES (rule, 'bad') RETURNING id INTO bad;
    INSERT INTO stig.tips (rule_id, body) VALUES (rule, 'good') RETURNING id INTO good;
    FOR i IN 1..6 LOOP
        ids := ARRAY(SELECT ctxgraph.log_retrievals('stig', run || i, rule, ARRAY[CASE WHEN i <= 3 THEN bad ELSE good END], ARRAY[0.5]));
        a := ctxgraph.save_attempt('stig', run || i, rule, 1);
        PERFORM ctxgraph.update_retrieval_attempt_ids('stig', ids, a);
        PERFORM ctxgraph.record_outcome('stig', a, i > 3, CASE WHEN i <= 3 THEN 'clean_failure' END);
        UPDATE stig.tip_retrievals SET tip_followed_llm = true WHERE id = ANY (ids);
    END LOOP;
    SELECT x.reason INTO expected FROM ctxgraph.tip_evidence('stig', as_of) AS x WHERE x.tip_id = bad;

    SELECT * INTO got FROM ctxgraph.evict_tips('stig', as_of) AS x WHERE x.tip_id = bad;
    IF (got.tip_id IS NOT NULL) IS DISTINCT FROM (expected IS NOT NULL)
       OR got.reason IS DISTINCT FROM expected OR got.retired
       OR EXISTS (SELECT 1 FROM stig.tips AS t WHERE t.id = bad AND t.retired_at IS NOT NULL)
       OR EXISTS (SELECT 1 FROM ctxgraph.tip_evictions AS e WHERE e.skill = 'stig' AND e.tip_id = bad) THEN
        RAISE EXCEPTION 'evict_tips dry run is wrong: % (tip_evidence reason %)', got, expected;
    END IF;
    IF expected IS NULL THEN
        RETURN;  -- tuned parameters do not retire the probe: nothing more to exercise
    END IF;

    SELECT * INTO got FROM ctxgraph.evict_tips('stig', as_of, dry_run => false) AS x WHERE x.tip_id = bad;
    IF NOT (got.retired AND got.reason = expected) IS TRUE
       OR NOT EXISTS (SELECT 1 FROM stig.tips AS t WHERE t.id = bad AND t.retired_at = as_of)
       OR NOT EXISTS (SELECT 1 FROM ctxgraph.tip_evictions AS e
                       WHERE e.skill = 'stig' AND e.tip_id = bad AND e.retired_at = as_of AND e.reason = expected
                         AND e.restored_at IS NULL AND (e.evidence ->> 'tip_id')::bigint = bad) THEN
        RAISE EXCEPTION 'evict_tips did not retire and log the tip: %', got;
    END IF;
    IF EXISTS (SELECT 1 FROM ctxgraph.evict_tips('stig', as_of, dry_run => false) AS x WHERE x.tip_id = bad) THEN
        RAISE EXCEPTION 'evict_tips retired an already retired tip again';
    END IF;

    restored := ctxgraph.restore_tip('stig', bad, as_of + interval '1 hour');
    IF NOT restored
       OR NOT EXISTS (SELECT 1 FROM stig.tips AS t WHERE t.id = bad AND t.retired_at IS NULL)
       OR NOT EXISTS (SELECT 1 FROM ctxgraph.tip_evictions AS e
                       WHERE e.skill = 'stig' AND e.tip_id = bad AND e.restored_at = as_of + interval '1 hour') THEN
        RAISE EXCEPTION 'restore_tip did not undo the retirement';
    END IF;
    restored := ctxgraph.restore_tip('stig', bad);
    IF restored THEN
        RAISE EXCEPTION 'restore_tip of an active tip returned true';
    END IF;

    FOR probe IN SELECT * FROM (VALUES
        ('P0002', format('SELECT ctxgraph.restore_tip(%L, -1)', 'stig')),
        ('22023', format('SELECT ctxgraph.restore_tip(%L, %s)', 'sqitch_verify_no_such_skill', bad)),
        ('22023', format('SELECT * FROM ctxgraph.evict_tips(%L)', 'sqitch_verify_no_such_skill')),
        ('22004', format('SELECT * FROM ctxgraph.evict_tips(NULL)')),
        ('22004', format('SELECT * FROM ctxgraph.evict_tips(%L, NULL)', 'stig')),
        ('22004', format('SELECT * FROM ctxgraph.evict_tips(%L, now(), NULL)', 'stig'))
    ) AS p (sqlstate, statement) LOOP
        BEGIN
            EXECUTE probe.statement;
            RAISE EXCEPTION 'no error' USING ERRCODE = 'VRFY1';
        EXCEPTION WHEN OTHERS THEN
            IF SQLSTATE <> probe.sqlstate THEN
                RAISE EXCEPTION 'expected SQLSTATE % from %, got % (%)', probe.sqlstate, probe.statement, SQLSTATE, SQLERRM;
            END IF;
        END;
    END LOOP;
END
$$;
ROLLBACK;
