-- Verify ctxgraph:scoring_leases on pg

SELECT skill, retrieval_id, pass_id, owner_pid, rescore, leased_at, expires_at FROM ctxgraph.scoring_leases WHERE FALSE;
SELECT leg, status, final, description FROM ctxgraph.scoring_statuses WHERE FALSE;
SELECT ctxgraph.param('scoring.lease_seconds'), ctxgraph.param('scoring.write_lock_timeout_ms');
-- A lease goes with its retrieval.
SELECT 1 / COUNT(*) FROM pg_catalog.pg_constraint
 WHERE conrelid = 'ctxgraph.scoring_leases'::regclass AND contype = 'f'
   AND confrelid = 'ctxgraph.tip_retrievals'::regclass AND confdeltype = 'c';
-- Only verdicts and deliberate choices are final; a missing script and a misconfigured judge are not.
SELECT 1 / (COUNT(*) = 5)::int FROM ctxgraph.scoring_statuses
 WHERE (leg, status, final) IN (('judge', 'judged', true), ('judge', 'no_script', false),
                                ('judge', 'judge_config', false), ('judge', 'judge_not_configured', false),
                                ('embedding', 'no_script', false));
-- The scorer runs the pass's functions; the writer, the ranker and PUBLIC do not.
SELECT 1 / (has_function_privilege('ctxgraph_scorer', 'ctxgraph.claim_scoring_batch(text, text, uuid, integer, bigint[], text[])', 'EXECUTE')
            AND has_function_privilege('ctxgraph_scorer', 'ctxgraph.write_scoring_results(text, uuid, jsonb)', 'EXECUTE')
            AND has_function_privilege('ctxgraph_scorer', 'ctxgraph.renew_scoring_leases(text, uuid)', 'EXECUTE')
            AND NOT has_function_privilege('ctxgraph_writer', 'ctxgraph.renew_scoring_leases(text, uuid)', 'EXECUTE')
            AND NOT has_function_privilege('ctxgraph_writer', 'ctxgraph.write_scoring_results(text, uuid, jsonb)', 'EXECUTE')
            AND NOT has_function_privilege('ctxgraph_ranker', 'ctxgraph.claim_scoring_batch(text, text, uuid, integer, bigint[], text[])', 'EXECUTE')
            AND NOT has_table_privilege('ctxgraph_scorer', 'ctxgraph.scoring_leases', 'INSERT, UPDATE, DELETE')
            AND NOT has_table_privilege('ctxgraph_writer', 'ctxgraph.scoring_leases', 'SELECT'))::int;

-- Behaviour, rolled back: a claim leases each row once and locks none; a write-back stamps only a
-- final result, leaves a missing script unscored, and writes nothing for a row another pass holds.
DO $$
DECLARE
    tips  bigint[];
    ids   bigint[];
    pass  uuid;
    got   bigint[];
    outcome text;
BEGIN
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'verify tip a'), ('verify-rule', 'verify tip b');
    SELECT array_agg(id ORDER BY id) INTO tips FROM stig.tips WHERE rule_id = 'verify-rule';
    ids := ARRAY(SELECT ctxgraph.log_retrievals('stig', 'verify-run', 'verify-rule', tips, '{0.9,0.8}', '2026-01-01 10:00+00'));
    pass := ctxgraph.begin_scoring_pass();
    SELECT array_agg(c.retrieval_id ORDER BY c.retrieval_id) INTO got
      FROM ctxgraph.claim_scoring_batch('stig', 'verify-run', pass, 10) AS c;
    IF got IS DISTINCT FROM ids THEN
        RAISE EXCEPTION 'verify: claim_scoring_batch leased % instead of %', got, ids;
    END IF;
    IF EXISTS (SELECT 1 FROM ctxgraph.claim_scoring_batch('stig', 'verify-run', pass, 10)) THEN
        RAISE EXCEPTION 'verify: a row was leased twice';
    END IF;
    PERFORM 1 FROM ctxgraph.write_scoring_results('stig', pass, jsonb_build_array(
        jsonb_build_object('retrieval_id', ids[1], 'llm', true, 'llm_status', 'judged', 'emb_status', 'embed_disabled'),
        jsonb_build_object('retrieval_id', ids[2], 'llm_status', 'no_script', 'emb_status', 'embed_disabled')));
    IF (SELECT array_agg(tip_followed_computed_at IS NOT NULL ORDER BY id) FROM stig.tip_retrievals WHERE id = ANY (ids))
       IS DISTINCT FROM ARRAY[true, false] THEN
        RAISE EXCEPTION 'verify: write_scoring_results stamped a missing script or missed a verdict';
    END IF;
    SELECT w.outcome INTO outcome FROM ctxgraph.write_scoring_results('stig', pass, jsonb_build_array(
        jsonb_build_object('retrieval_id', ids[2], 'llm', true, 'llm_status', 'judged', 'emb_status', 'embed_disabled'))) AS w;
    IF outcome <> 'not_leased' OR (SELECT tip_followed_llm FROM stig.tip_retrievals WHERE id = ids[2]) IS NOT NULL THEN
        RAISE EXCEPTION 'verify: a row no longer leased to the pass was written (%)', outcome;
    END IF;
    PERFORM ctxgraph.end_scoring_pass('stig', pass);
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN
    NULL;
END
$$;
