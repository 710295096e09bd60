-- Contracts of the one-definition layer: ctxgraph.scored_retrievals (every consumer derives from
-- it), parameters read loudly (a missing row raises, never a silent answer), the follow rule's
-- pieces, role names from ctxgraph.group_roles, the ranker's rule_ranking, and no function left to
-- PUBLIC. Each finding of the contracts issue has its assertion here.
BEGIN;
SELECT plan(46);

-- ---------------------------------------------------------------------------------------------
-- scored_retrievals as an API: columns and types (4)
-- ---------------------------------------------------------------------------------------------
SELECT has_view('ctxgraph', 'scored_retrievals', 'ctxgraph.scored_retrievals exists');
SELECT columns_are('ctxgraph', 'scored_retrievals',
    ARRAY['skill', 'retrieval_id', 'tip_id', 'attempt_key', 'attempt_id', 'run_id', 'rule_id', 'retrieved_at',
          'credit', 'followed', 'follow_weight', 'follow_source', 'follow_decision', 'cosine', 'harmful',
          'follow_probability'],
    'scored_retrievals has exactly the contract columns');
SELECT columns_are('stig', 'scored_retrievals',
    ARRAY['retrieval_id', 'tip_id', 'attempt_key', 'attempt_id', 'run_id', 'rule_id', 'retrieved_at',
          'credit', 'followed', 'follow_weight', 'follow_source', 'follow_decision', 'cosine', 'harmful',
          'follow_probability'],
    'stig.scored_retrievals projects every column but skill');
SELECT is(ARRAY(SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
                 FROM pg_attribute AS a WHERE a.attrelid = 'ctxgraph.scored_retrievals'::regclass
                  AND a.attname IN ('attempt_key', 'credit', 'followed', 'follow_weight', 'follow_source', 'harmful')
                ORDER BY a.attnum),
          ARRAY['attempt_key bigint', 'credit double precision', 'followed boolean', 'follow_weight double precision',
                'follow_source text', 'harmful boolean'],
          'scored_retrievals column types');

-- ---------------------------------------------------------------------------------------------
-- scored_retrievals on hand-built rows (8). One tip, rule r: attempt 1 passes (judged followed),
-- attempt 2 breaks the system (no judge, cosine exactly at the threshold), attempt 3 fails
-- cleanly (no judge, NaN cosine); a legacy unlinked row with half confidence; a row with no
-- outcome yet, which the view leaves out.
-- ---------------------------------------------------------------------------------------------
SELECT tests.make_tip('stig', 'r', 'contract tip') AS tip \gset
SELECT tests.make_attempt('stig', 'run-c', 'r', 1, '2026-11-29 10:00+00') AS a1 \gset
SELECT tests.make_attempt('stig', 'run-c', 'r', 2, '2026-11-29 11:00+00') AS a2 \gset
SELECT tests.make_attempt('stig', 'run-c', 'r', 3, '2026-11-29 12:00+00') AS a3 \gset
INSERT INTO stig.tip_retrievals (run_id, attempt_id, tip_id, rule_id, rank, tip_followed_llm, tip_followed_emb, retrieved_at)
VALUES ('run-c', :a1, :tip, 'r', 1, true, 0.1, '2026-11-29 10:00+00'),
       ('run-c', :a2, :tip, 'r', 1, NULL, 0.6, '2026-11-29 11:00+00'),
       ('run-c', :a3, :tip, 'r', 1, NULL, 'NaN', '2026-11-29 12:00+00');
SELECT ctxgraph.record_outcome('stig', :a1, true);
SELECT ctxgraph.record_outcome('stig', :a2, false, 'health_failure');
SELECT ctxgraph.record_outcome('stig', :a3, false, 'clean_failure');
INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, outcome_value, outcome_confidence, retrieved_at)
VALUES ('run-c', :tip, 'r', 2, 0.8, 0.5, '2026-11-29 09:00+00'),
       ('run-c', :tip, 'r', 3, NULL, NULL, '2026-11-29 13:00+00');

SELECT is((SELECT count(*) FROM stig.scored_retrievals WHERE tip_id = :tip), 4::bigint,
          'scored_retrievals: only the retrievals whose outcome is known');
SELECT results_eq(
    format($$SELECT attempt_key = coalesce(attempt_id, -retrieval_id), credit, followed, follow_weight, follow_source,
                    follow_decision, harmful
               FROM stig.scored_retrievals WHERE tip_id = %s ORDER BY retrieved_at$$, :tip),
    $$VALUES (true, 0.4::float8, NULL::boolean, 0.5::float8, 'none', 'unscored', false),
             (true, 1.0::float8, true, 1.0::float8, 'judge', 'judge_followed', false),
             (true, -0.2::float8, true, 1.0::float8, 'embedding', 'emb_followed', true),
             (true, 0.0::float8, NULL::boolean, 0.5::float8, 'none', 'unscored', false)$$,
    'scored_retrievals: credit (value x confidence), verdict, weight, source and harm per row');
SELECT is((SELECT cosine FROM stig.scored_retrievals WHERE attempt_id = :a3), NULL::double precision,
          'scored_retrievals: a NaN cosine reads as NULL');

UPDATE ctxgraph.parameters SET value = 0.3 WHERE name = 'follow.weight.judge_ignored';
UPDATE stig.tip_retrievals SET tip_followed_llm = false WHERE attempt_id = :a1;
SELECT is((SELECT follow_weight FROM stig.scored_retrievals WHERE attempt_id = :a1), 0.3::double precision,
          'scored_retrievals: the weight is the coefficient in force (judge_ignored tuned to 0.3)');
-- The maintained sums move by differences, so they equal a from-scratch sum up to float rounding
-- in the last bits (which bits depends on the order the rows were summed in): compared to 12 places.
SELECT is((SELECT round(hit_rate::numeric, 12) FROM stig.tip_hit_rates WHERE tip_id = :tip),
          (SELECT round(avg(credit * follow_weight)::numeric, 12) FROM stig.scored_retrievals WHERE tip_id = :tip),
          'tip_hit_rates.hit_rate is the mean follow-weighted credit of scored_retrievals');
SELECT is((SELECT round(outcome_hit_rate::numeric, 12) FROM stig.tip_hit_rates WHERE tip_id = :tip),
          (SELECT round(avg(credit)::numeric, 12) FROM stig.scored_retrievals WHERE tip_id = :tip),
          'tip_hit_rates.outcome_hit_rate is the mean credit of scored_retrievals');
SELECT is((SELECT attempts FROM ctxgraph.tip_evidence('stig', '2026-12-01') WHERE tip_id = :tip),
          (SELECT count(DISTINCT attempt_key) FROM stig.scored_retrievals WHERE tip_id = :tip),
          'tip_evidence counts the distinct attempt keys of scored_retrievals');
SELECT is((SELECT harm FROM stig.tip_hit_rates WHERE tip_id = :tip), 1::bigint,
          'tip_hit_rates.harm counts followed rows of attempts that broke the system');

-- ---------------------------------------------------------------------------------------------
-- The follow rule's pieces (6)
-- ---------------------------------------------------------------------------------------------
SELECT is(ctxgraph.known_cosine('NaN'), NULL::double precision, 'known_cosine: NaN is NULL');
SELECT is(ctxgraph.known_cosine(-0.25), -0.25::double precision, 'known_cosine: a cosine is itself');
SELECT is(ctxgraph.follow_decision(NULL, 0.5, 0.5), 'emb_followed', 'follow_decision: at the threshold is followed (>=)');
SELECT is(ctxgraph.follow_decision(false, 0.9, 0.5), 'judge_ignored', 'follow_decision: the judge wins over the cosine');
SELECT is(ctxgraph.follow_decision(NULL, 'NaN', 0.5), 'unscored', 'follow_decision: NaN and no judge is unscored');
SELECT is(ctxgraph.follow_verdict('unscored'), NULL::boolean, 'follow_verdict: unscored has no verdict');

-- ---------------------------------------------------------------------------------------------
-- A missing parameter row raises 22023 wherever it is read, never a silent answer (13). Each in
-- its own savepoint, so the row comes back for the next one.
-- ---------------------------------------------------------------------------------------------
CREATE FUNCTION pg_temp.without_parameter(name text, query text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM ctxgraph.parameters AS p WHERE p.name = without_parameter.name;
    EXECUTE format('SELECT count(q.*) FROM (%s) AS q', query);
    RAISE EXCEPTION 'answered' USING ERRCODE = 'P0004';
EXCEPTION
    WHEN invalid_parameter_value THEN RETURN SQLERRM;
    WHEN assert_failure THEN RETURN 'answered without ' || name;
END
$$;
SELECT is(pg_temp.without_parameter('follow.emb_threshold', 'SELECT ctxgraph.follow_weight(NULL, 0.9)'),
          'ctxgraph: no parameter named ''follow.emb_threshold''',
          'follow_weight(NULL, 0.9) without follow.emb_threshold raises (it returned 0)');
SELECT is(pg_temp.without_parameter('follow.emb_threshold', 'SELECT ctxgraph.tip_followed(NULL, 0.9)'),
          'ctxgraph: no parameter named ''follow.emb_threshold''', 'tip_followed without the threshold raises');
SELECT is(pg_temp.without_parameter('follow.weight.judge_followed', 'SELECT ctxgraph.follow_weight(true, NULL)'),
          'ctxgraph: no parameter named ''follow.weight.judge_followed''', 'follow_weight without its coefficient raises');
SELECT is(pg_temp.without_parameter('follow.weight.unscored', 'SELECT follow_weight FROM ctxgraph.scored_retrievals'),
          'ctxgraph: no parameter named ''follow.weight.unscored''', 'scored_retrievals without a weight raises');
SELECT is(pg_temp.without_parameter('follow.emb_threshold', 'SELECT followed FROM ctxgraph.scored_retrievals'),
          'ctxgraph: no parameter named ''follow.emb_threshold''', 'scored_retrievals without the threshold raises');
SELECT is(pg_temp.without_parameter('utility.bound_z', 'SELECT utility_lower_bound FROM stig.tip_hit_rates'),
          'ctxgraph: no parameter named ''utility.bound_z''', 'tip_hit_rates without utility.bound_z raises');
SELECT is(pg_temp.without_parameter('misleading.min_attempts', 'SELECT tip_id FROM stig.misleading_tips'),
          'ctxgraph: no parameter named ''misleading.min_attempts''', 'misleading_tips without its threshold raises');
SELECT is(pg_temp.without_parameter('eviction.min_shortfall', $$SELECT * FROM ctxgraph.tip_evidence('stig', now())$$),
          'ctxgraph: no parameter named ''eviction.min_shortfall''', 'tip_evidence without an eviction threshold raises');
SELECT is(pg_temp.without_parameter('eviction.min_runs', 'SELECT tip_id FROM stig.eviction_candidates'),
          'ctxgraph: no parameter named ''eviction.min_runs''', 'eviction_candidates without an eviction threshold raises');
SELECT is(pg_temp.without_parameter('follow.emb_threshold', 'SELECT kappa FROM ctxgraph.follow_agreement'),
          'ctxgraph: no parameter named ''follow.emb_threshold''', 'follow_agreement without the threshold raises');
SELECT is(pg_temp.without_parameter('anomaly.low_cosine', 'SELECT kind FROM ctxgraph.follow_anomalies'),
          'ctxgraph: no parameter named ''anomaly.low_cosine''', 'follow_anomalies without its threshold raises');
SELECT is(pg_temp.without_parameter('follow.emb_threshold',
              $$SELECT * FROM ctxgraph.follow_label_metrics('stig', ARRAY(SELECT id FROM stig.tip_retrievals), ARRAY(SELECT true FROM stig.tip_retrievals))$$),
          'ctxgraph: no parameter named ''follow.emb_threshold''', 'follow_label_metrics without the threshold raises');
SELECT is(pg_temp.without_parameter('follow.weight.emb_followed', 'SELECT ctxgraph.refresh_tip_stats()'),
          'ctxgraph: no parameter named ''follow.weight.emb_followed''', 'refresh_tip_stats without a weight raises');

-- ---------------------------------------------------------------------------------------------
-- Role names from one place; the ranker runs what it is offered; nothing left to PUBLIC (15)
-- ---------------------------------------------------------------------------------------------
SELECT set_eq('SELECT role_name::text FROM ctxgraph.group_roles',
              $$SELECT rolname::text FROM pg_roles WHERE rolname LIKE 'ctxgraph\_%' AND NOT rolcanlogin$$,
              'group_roles names every ctxgraph group role');
SELECT is(ctxgraph._roles('{analyst,ranker}'), 'ctxgraph_analyst, ctxgraph_ranker', '_roles lists the kinds asked for');
SELECT throws_ok($$SELECT ctxgraph._roles('{root}')$$, '22023', NULL, '_roles refuses an unknown kind');
SELECT ok(has_schema_privilege(g.role_name, 'cve', 'USAGE'), 'skill schema usage for ' || g.kind)
  FROM ctxgraph.group_roles AS g ORDER BY g.kind;
SELECT is((SELECT count(*) FROM pg_proc AS p
            WHERE p.pronamespace = 'ctxgraph'::regnamespace
              AND (p.proacl IS NULL OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) AS x WHERE x.grantee = 0))),
          0::bigint, 'no ctxgraph function is executable by PUBLIC');
SELECT ok(NOT has_function_privilege('public', 'ctxgraph.tip_evidence(text, timestamptz)', 'EXECUTE'),
          'tip_evidence (SECURITY DEFINER over the raw log) is not executable by PUBLIC');
SET LOCAL ROLE ctxgraph_ranker;
SELECT lives_ok($$SELECT * FROM ctxgraph.rule_ranking('stig', 'r')$$,
                'the ranker runs rule_ranking (it got permission denied for table tip_retrievals)');
SELECT is((SELECT count(*) FROM ctxgraph.rule_ranking('stig', 'r')), 1::bigint, 'rule_ranking answers the ranker');
SELECT lives_ok('SELECT * FROM stig.eviction_candidates', 'the ranker reads eviction_candidates');
SELECT lives_ok('SELECT * FROM stig.scored_retrievals', 'the ranker reads scored_retrievals');
SELECT throws_ok('SELECT * FROM stig.tip_retrievals', '42501', NULL, 'the ranker still cannot read the raw log');
RESET ROLE;
SET LOCAL ROLE ctxgraph_writer;
SELECT throws_ok('SELECT * FROM stig.scored_retrievals', '42501', NULL, 'the writer does not read scored_retrievals');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
