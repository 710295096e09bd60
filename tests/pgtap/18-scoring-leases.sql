-- The scoring pass's leases (deploy/scoring_leases.sql): a claim leases each row to one live pass,
-- a dead or expired lease can be taken over, a write-back writes only rows still leased to its pass,
-- stamps only final results, re-scores only into a final result, and refuses bad input by SQLSTATE.
BEGIN;
SELECT plan(41);

SELECT has_table('ctxgraph', 'scoring_leases', 'ctxgraph.scoring_leases exists');
SELECT col_is_pk('ctxgraph', 'scoring_leases', ARRAY['skill', 'retrieval_id'], 'one lease per retrieval');
SELECT results_eq($$SELECT leg || '/' || status FROM ctxgraph.scoring_statuses WHERE NOT final ORDER BY 1$$,
                  ARRAY['embedding/model_missing', 'embedding/no_script', 'judge/connection', 'judge/http_error',
                        'judge/judge_config', 'judge/judge_not_configured', 'judge/judge_unreachable',
                        'judge/no_script', 'judge/rate_limited', 'judge/timeout'],
                  'a missing script and a judge that is down or misconfigured are the statuses left for retry');

INSERT INTO stig.tips (rule_id, body) VALUES ('lease-rule', 'lease tip 1'), ('lease-rule', 'lease tip 2'),
                                             ('lease-rule', 'lease tip 3');
CREATE TEMP TABLE lease_rows AS
SELECT row_number() OVER (ORDER BY r.id)::integer AS n, r.id
  FROM ctxgraph.log_retrievals('stig', 'lease-run', 'lease-rule',
                               (SELECT array_agg(id ORDER BY id) FROM stig.tips WHERE rule_id = 'lease-rule'),
                               '{0.9,0.8,0.7}', '2026-03-01 10:00+00') AS r (id);
GRANT SELECT ON lease_rows TO ctxgraph_scorer;
CREATE FUNCTION pg_temp.p(n integer) RETURNS uuid LANGUAGE sql AS $$ SELECT current_setting('lease_test.p' || n)::uuid $$;
CREATE FUNCTION pg_temp.rid(n integer) RETURNS bigint LANGUAGE sql AS $$ SELECT id FROM lease_rows WHERE n = $1 $$;
CREATE FUNCTION pg_temp.result(n integer, llm_status text, emb_status text, llm boolean DEFAULT NULL)
RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_array(jsonb_build_object('retrieval_id', pg_temp.rid(n), 'llm', llm,
                                                'llm_status', llm_status, 'emb_status', emb_status))
$$;

GRANT EXECUTE ON FUNCTION pg_temp.p(integer), pg_temp.rid(integer), pg_temp.result(integer, text, text, boolean)
   TO ctxgraph_scorer;
SET LOCAL ROLE ctxgraph_scorer;

SELECT throws_ok($$SELECT * FROM ctxgraph.claim_scoring_batch('stig', 'lease-run', gen_random_uuid(), 10)$$,
                 '55000', NULL, 'a claim needs a pass begun on this session');
DO $$
BEGIN
    PERFORM set_config('lease_test.p1', ctxgraph.begin_scoring_pass()::text, true);
    PERFORM set_config('lease_test.p2', ctxgraph.begin_scoring_pass()::text, true);
END
$$;
SELECT isnt(pg_temp.p(1), pg_temp.p(2), 'each pass has its own id');

SELECT results_eq($$SELECT retrieval_id FROM ctxgraph.claim_scoring_batch('stig', 'lease-run', pg_temp.p(1), 2)$$,
                  $$SELECT id FROM lease_rows WHERE n <= 2 ORDER BY id$$, 'a claim leases up to batch_size rows, in id order');
SELECT results_eq($$SELECT retrieval_id FROM ctxgraph.claim_scoring_batch('stig', 'lease-run', pg_temp.p(2), 10)$$,
                  $$SELECT pg_temp.rid(3)$$, 'another pass gets only the rows no live pass holds');
SELECT is_empty($$SELECT * FROM ctxgraph.claim_scoring_batch('stig', 'lease-run', pg_temp.p(1), 10)$$,
                'a row with a live lease is claimed by nobody else');
SELECT is((SELECT count(*)::int FROM ctxgraph.scoring_leases
            WHERE retrieval_id IN (SELECT id FROM lease_rows)
              AND owner_pid = pg_backend_pid() AND expires_at - leased_at = interval '900 seconds'),
          3, 'a lease records its owner and lasts scoring.lease_seconds');

-- Renewal: a pass extends its own leases while it works, and only those.
RESET ROLE;
UPDATE ctxgraph.scoring_leases SET leased_at = now() - interval '20 minutes', expires_at = now() + interval '1 minute'
 WHERE pass_id = pg_temp.p(1);
SET LOCAL ROLE ctxgraph_scorer;
SELECT is(ctxgraph.renew_scoring_leases('stig', pg_temp.p(1)), 2, 'a renewal extends every lease of the pass');
SELECT is((SELECT count(*)::int FROM ctxgraph.scoring_leases
            WHERE pass_id = pg_temp.p(1) AND expires_at >= now() + interval '900 seconds'),
          2, 'a renewed lease lasts scoring.lease_seconds from the renewal');
SELECT is((SELECT expires_at - leased_at FROM ctxgraph.scoring_leases WHERE pass_id = pg_temp.p(2)),
          interval '900 seconds', 'another pass''s lease is left alone');
RESET ROLE;
UPDATE ctxgraph.scoring_leases SET owner_pid = -1 WHERE retrieval_id = pg_temp.rid(2);
SET LOCAL ROLE ctxgraph_scorer;
SELECT is(ctxgraph.renew_scoring_leases('stig', pg_temp.p(1)), 1, 'a lease this session no longer owns is not renewed');
RESET ROLE;
UPDATE ctxgraph.scoring_leases SET owner_pid = pg_backend_pid() WHERE retrieval_id = pg_temp.rid(2);
SET LOCAL ROLE ctxgraph_scorer;
SELECT throws_ok($$SELECT ctxgraph.renew_scoring_leases('stig', NULL)$$, '22004', NULL, 'a NULL pass id is refused');
SELECT is((SELECT count(*)::int FROM stig.tip_retrievals WHERE run_id = 'lease-run' AND tip_followed_computed_at IS NULL),
          3, 'a claim writes nothing to the retrievals');

RESET ROLE;
-- A lease whose owner's session is gone, and a lease past its expiry, are free.
UPDATE ctxgraph.scoring_leases SET owner_pid = -1 WHERE retrieval_id = pg_temp.rid(3);
UPDATE ctxgraph.scoring_leases SET leased_at = now() - interval '2 hours', expires_at = now() - interval '1 hour'
 WHERE retrieval_id = pg_temp.rid(1);
SET LOCAL ROLE ctxgraph_scorer;
SELECT results_eq($$SELECT retrieval_id FROM ctxgraph.claim_scoring_batch('stig', 'lease-run', pg_temp.p(2), 10)$$,
                  $$SELECT id FROM lease_rows WHERE n IN (1, 3) ORDER BY id$$,
                  'a lease of a dead session and an expired lease are taken over');
SELECT is((SELECT array_agg(pass_id::text ORDER BY retrieval_id) FROM ctxgraph.scoring_leases
            WHERE retrieval_id IN (SELECT id FROM lease_rows)),
          ARRAY[pg_temp.p(2)::text, pg_temp.p(1)::text, pg_temp.p(2)::text], 'the leases taken over now name the new pass');

-- Write-back.
SELECT results_eq($$SELECT outcome FROM ctxgraph.write_scoring_results('stig', pg_temp.p(1), pg_temp.result(2, 'judged', 'embed_disabled', true))$$,
                  ARRAY['stamped'], 'a final result of a row leased to the pass is stamped');
SELECT is((SELECT tip_followed_llm AND tip_followed_computed_at IS NOT NULL FROM stig.tip_retrievals WHERE id = pg_temp.rid(2)),
          true, 'the verdict and the stamp are written');
SELECT is((SELECT count(*)::int FROM ctxgraph.scoring_leases WHERE retrieval_id = pg_temp.rid(2)), 0,
          'the written row''s lease is released');
SELECT results_eq($$SELECT outcome FROM ctxgraph.write_scoring_results('stig', pg_temp.p(1), pg_temp.result(3, 'judged', 'embed_disabled', true))$$,
                  ARRAY['not_leased'], 'a row another pass took over is not written by the first');
SELECT is((SELECT tip_followed_llm FROM stig.tip_retrievals WHERE id = pg_temp.rid(3)), NULL,
          'nothing of it was written');
SELECT results_eq($$SELECT outcome || '/' || retry_reason FROM ctxgraph.write_scoring_results('stig', pg_temp.p(2), pg_temp.result(3, 'no_script', 'no_script'))$$,
                  ARRAY['left_unscored/no_script'], 'a missing script is recorded and left unscored, with its reason');
SELECT is((SELECT (r.tip_followed_computed_at IS NULL, s.llm_status)::text FROM stig.tip_retrievals AS r
             JOIN ctxgraph.retrieval_scores AS s ON s.skill = r.skill AND s.retrieval_id = r.id WHERE r.id = pg_temp.rid(3)),
          '(t,no_script)', 'the row stays unscored and says why');
SELECT results_eq($$SELECT outcome FROM ctxgraph.write_scoring_results('stig', pg_temp.p(2), pg_temp.result(3, 'judge_config', 'computed'))$$,
                  ARRAY['not_leased'], 'a row left unscored is no longer leased: the next pass claims it');

RESET ROLE;
UPDATE stig.tip_retrievals SET tip_followed_computed_at = now() WHERE id = pg_temp.rid(1);
SET LOCAL ROLE ctxgraph_scorer;
SELECT results_eq($$SELECT outcome FROM ctxgraph.write_scoring_results('stig', pg_temp.p(2), pg_temp.result(1, 'judged', 'computed', false))$$,
                  ARRAY['already_scored'], 'a row stamped by someone else meanwhile is left alone');

-- Bad input.
SELECT throws_ok($$SELECT * FROM ctxgraph.write_scoring_results('stig', pg_temp.p(2), pg_temp.result(1, 'judged', 'bogus'))$$,
                 '22023', NULL, 'an unknown status is refused');
SELECT throws_ok($$SELECT * FROM ctxgraph.write_scoring_results('stig', pg_temp.p(2), pg_temp.result(1, 'judged', 'computed') || pg_temp.result(1, 'judged', 'computed'))$$,
                 '22023', NULL, 'a retrieval twice in one write is refused');
SELECT throws_ok($$SELECT * FROM ctxgraph.write_scoring_results('stig', pg_temp.p(2), '{}'::jsonb)$$,
                 '22023', NULL, 'scores that are not an array are refused');
SELECT throws_ok($$SELECT * FROM ctxgraph.write_scoring_results('stig', NULL, '[]'::jsonb)$$,
                 '22004', NULL, 'a NULL pass id is refused');
SELECT throws_ok($$SELECT * FROM ctxgraph.scoring_candidates('stig', 'no-such-run')$$,
                 'P0002', 'ctxgraph: no run ''no-such-run'' in skill stig', 'an unknown run is named');
SELECT throws_ok($$SELECT * FROM ctxgraph.scoring_candidates('stig', 'lease-run', '{judged,bogus}')$$,
                 '22023', NULL, 'an unknown rescore reason is refused');
SELECT throws_ok($$SELECT * FROM ctxgraph.claim_scoring_batch('stig', 'lease-run', pg_temp.p(2), 0)$$,
                 '22023', NULL, 'a batch size below 1 is refused');

-- Re-scoring: stamped rows of the named statuses come back; only a final result replaces them.
SELECT results_eq($$SELECT retrieval_id, stamped FROM ctxgraph.scoring_candidates('stig', 'lease-run', '{judged}')$$,
                  $$SELECT id, n = 2 FROM lease_rows WHERE n IN (2, 3) ORDER BY id$$,
                  'candidates: the unscored row and the row stamped judged');
SELECT results_eq($$SELECT retrieval_id FROM ctxgraph.claim_scoring_batch('stig', 'lease-run', pg_temp.p(1), 10, ARRAY[pg_temp.rid(1), pg_temp.rid(3)], '{judged}')$$,
                  $$SELECT pg_temp.rid(2)$$, 'a re-score claims a stamped row (exclude leaves out the rows named)');
SELECT results_eq($$SELECT outcome FROM ctxgraph.write_scoring_results('stig', pg_temp.p(1), pg_temp.result(2, 'timeout', 'computed'))$$,
                  ARRAY['kept'], 'a re-score that is not final keeps the old result');
SELECT is((SELECT tip_followed_llm AND tip_followed_computed_at IS NOT NULL FROM stig.tip_retrievals WHERE id = pg_temp.rid(2)),
          true, 'the old verdict and stamp stand');
SELECT lives_ok($$SELECT * FROM ctxgraph.claim_scoring_batch('stig', 'lease-run', pg_temp.p(1), 10, '{}', '{judged}')$$,
                'the row is claimed for re-scoring again');
SELECT results_eq($$SELECT outcome FROM ctxgraph.write_scoring_results('stig', pg_temp.p(1), pg_temp.result(2, 'judged', 'computed', false))$$,
                  ARRAY['stamped'], 'a final re-score replaces the result');
SELECT is((SELECT tip_followed_llm FROM stig.tip_retrievals WHERE id = pg_temp.rid(2)), false, 'with the new verdict');

SELECT is(ctxgraph.end_scoring_pass('stig', pg_temp.p(1)) + ctxgraph.end_scoring_pass('stig', pg_temp.p(2)), 1,
          'ending the passes releases the leases they still hold');

SELECT * FROM finish();
ROLLBACK;
