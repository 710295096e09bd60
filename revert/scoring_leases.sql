-- Revert ctxgraph:scoring_leases from pg

BEGIN;

DROP FUNCTION ctxgraph.write_scoring_results(text, uuid, jsonb);
DROP FUNCTION ctxgraph.claim_scoring_batch(text, text, uuid, integer, bigint[], text[]);
DROP FUNCTION ctxgraph.scoring_candidates(text, text, text[]);
DROP FUNCTION ctxgraph.renew_scoring_leases(text, uuid);
DROP FUNCTION ctxgraph.end_scoring_pass(text, uuid);
DROP FUNCTION ctxgraph.begin_scoring_pass();
DROP FUNCTION ctxgraph._require_scoring_pass(uuid);
DROP FUNCTION ctxgraph._live_scoring_passes();
DROP FUNCTION ctxgraph._scoring_pass_lock_class();
DROP TABLE ctxgraph.scoring_leases;
DROP TABLE ctxgraph.scoring_statuses;
DELETE FROM ctxgraph.parameters WHERE name IN ('scoring.lease_seconds', 'scoring.write_lock_timeout_ms');

COMMIT;
