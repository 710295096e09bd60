-- Verify ctxgraph:function_tip_evidence on pg

SELECT 'ctxgraph.tip_evidence(text, timestamptz)'::regprocedure;
SELECT 1 / (COUNT(*) = 7)::int FROM ctxgraph.parameters
 WHERE name IN ('eviction.min_attempts', 'eviction.min_runs', 'eviction.min_followed_attempts', 'eviction.bound_z',
                'eviction.min_shortfall', 'eviction.min_harm_attempts', 'eviction.min_harm_excess');
-- Owner's rights with a pinned search_path (the ranker reads eviction_candidates without the log).
SELECT 1 / COUNT(*) FROM pg_catalog.pg_proc
 WHERE oid = 'ctxgraph.tip_evidence(text, timestamptz)'::regprocedure AND prosecdef
   AND proconfig @> ARRAY['search_path=pg_catalog, ctxgraph, pg_temp'];
SELECT 1 / (COUNT(*) = 2)::int FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_writer', 'ctxgraph_analyst')
   AND pg_catalog.has_function_privilege(r.oid, 'ctxgraph.tip_evidence(text, timestamptz)', 'EXECUTE');

-- Behaviour, rolled back, on a rule of its own: tip "bad" is followed in 3 attempts (3 runs)
-- that failed cleanly, tip "good" in 3 others that passed. Every figure of "bad" is checked
-- against the definition and the parameters in force; with the defaults "bad" is retired for
-- low utility and "good" is not. Evidence as of an instant before the probe has neither tip.
BEGIN;
DO $$
DECLARE
    run    text := 'sqitch-verify-' || gen_random_uuid();
    rule   text := 'sqitch_verify_rule_' || gen_random_uuid();
    bad    bigint;
    good   bigint;
    ids    bigint[];
    a      bigint;
    i      integer;
    c      double precision := ctxgraph.param('outcome.confidence');
    fw     double precision := ctxgraph.follow_weight(true, NULL);
    fail   double precision;
    pass   double precision;
    base   double precision;
    upper  double precision;
    e      record;
BEGIN
    INSERT INTO stig.tips (rule_id, body) VALUES (rule, 'bad') RETURNING id INTO bad;
    INSERT INTO stig.tips (rule_id, body) VALUES (rule, 'good') RETURNING id INTO good;
    FOR i IN 1..6 LOOP
        ids := ARRAY(SELECT ctxgraph.log_retrievals('stig', run || i, rule, ARRAY[CASE WHEN i <= 3 THEN bad ELSE good END], ARRAY[0.5]));
        a := ctxgraph.save_attempt('stig', run || i, rule, 1);
        PERFORM ctxgraph.update_retrieval_attempt_ids('stig', ids, a);
        IF i <= 3 THEN
            PERFORM ctxgraph.record_outcome('stig', a, false, 'clean_failure');
        ELSE
            PERFORM ctxgraph.record_outcome('stig', a, true);
        END IF;
        UPDATE stig.tip_retrievals SET tip_followed_llm = true WHERE id = ANY (ids);
    END LOOP;

    fail := ctxgraph.graded_outcome('stig', false, 1, 'clean_failure') * c;
    pass := ctxgraph.graded_outcome('stig', true, 1) * c;
    base := (3 * pass + 3 * (1 - fw) * fail) / nullif(3 + 3 * (1 - fw), 0);
    upper := ctxgraph.wilson_upper(fail, 3 * fw, ctxgraph.param('eviction.bound_z'));
    SELECT * INTO e FROM ctxgraph.tip_evidence('stig') AS x WHERE x.tip_id = bad;
    IF NOT (e.rule_id = rule AND e.attempts = 3 AND e.runs = 3 AND abs(e.followed_attempts - 3 * fw) < 1e-9
            AND (fw = 0 OR abs(e.followed_outcome - fail) < 1e-9)
            AND e.outcome_upper_bound IS NOT DISTINCT FROM upper
            AND abs(e.baseline_attempts - (3 + 3 * (1 - fw))) < 1e-9
            AND e.rule_baseline IS NOT DISTINCT FROM base
            AND e.shortfall_lower_bound IS NOT DISTINCT FROM base - upper
            AND e.harm_attempts = 0 AND NOT e.retired) IS TRUE THEN
        RAISE EXCEPTION 'tip_evidence of the failing tip: % (expected baseline %, upper bound %)', e, base, upper;
    END IF;
    IF (e.reason IS NOT NULL) IS DISTINCT FROM
       (3 >= ctxgraph.param('eviction.min_attempts') AND 3 >= ctxgraph.param('eviction.min_runs')
        AND 3 * fw >= ctxgraph.param('eviction.min_followed_attempts')
        AND base - upper >= ctxgraph.param('eviction.min_shortfall')) THEN
        RAISE EXCEPTION 'tip_evidence reason of the failing tip disagrees with the eviction.* parameters: %', e;
    END IF;
    SELECT * INTO e FROM ctxgraph.tip_evidence('stig') AS x WHERE x.tip_id = good;
    IF NOT (e.attempts = 3 AND (e.reason IS NULL OR e.shortfall_lower_bound >= ctxgraph.param('eviction.min_shortfall'))) IS TRUE THEN
        RAISE EXCEPTION 'tip_evidence of the passing tip: %', e;
    END IF;
    IF EXISTS (SELECT 1 FROM ctxgraph.tip_evidence('stig', '2000-01-01') AS x WHERE x.tip_id IN (bad, good)) THEN
        RAISE EXCEPTION 'tip_evidence as of 2000 shows tips created later';
    END IF;
END
$$;
ROLLBACK;
