-- Data for the sqitch round trip: rows in every skill table of both skills, through the public
-- write path, with the DEF-27 columns filled, so a revert that touched anything else would show.
\set ON_ERROR_STOP 1
BEGIN;
INSERT INTO stig.tips (id, rule_id, body, embedding, created_at) VALUES
    (9001, 'harden_sshd_macs', 'Use update-crypto-policies; do not edit ssh_config by hand.',
     array_fill(0.01::real, ARRAY[384])::vector, '2026-05-01T00:00:00Z'),
    (9002, 'harden_sshd_macs', 'Back up /etc/ssh/ssh_config before changing it.', NULL, '2026-05-01T00:00:00Z'),
    (9003, NULL, 'Validate with sshd -t before restarting sshd.', NULL, '2026-05-01T00:00:00Z');
INSERT INTO cve.tips (id, rule_id, body, created_at) VALUES
    (9101, 'CVE-2026-0001', 'Pin the fixed package version with dnf.', '2026-05-01T00:00:00Z');

SELECT ctxgraph.log_retrievals('stig', 'run-6', 'harden_sshd_macs', ARRAY[9001, 9002, 9003]::bigint[],
                               ARRAY[0.91, 0.80, 0.55], '2026-05-02T10:00:00Z');
SELECT ctxgraph.save_attempt('stig', 'run-6', 'harden_sshd_macs', 1, 'heredoc over ssh_config',
                             '2026-05-02T10:00:05Z', '2026-05-02T10:01:00Z') AS attempt_stig \gset
SELECT ctxgraph.update_retrieval_attempt_ids('stig',
         ARRAY(SELECT id FROM stig.tip_retrievals WHERE run_id = 'run-6'), :attempt_stig);
SELECT ctxgraph.record_outcome('stig', :attempt_stig, true);

SELECT ctxgraph.log_retrievals('stig', 'run-7', 'harden_sshd_macs', ARRAY[9001, 9003]::bigint[],
                               ARRAY[0.91, NULL], '2026-05-09T10:00:00Z');
SELECT ctxgraph.save_attempt('stig', 'run-7', 'harden_sshd_macs', 1) AS attempt_stig7 \gset
SELECT ctxgraph.update_retrieval_attempt_ids('stig',
         ARRAY(SELECT id FROM stig.tip_retrievals WHERE run_id = 'run-7'), :attempt_stig7);
SELECT ctxgraph.record_outcome('stig', :attempt_stig7, false, 'health_failure');

SELECT ctxgraph.log_retrievals('cve', 'cve-run-1', 'CVE-2026-0001', ARRAY[9101]::bigint[], ARRAY[0.7],
                               '2026-05-03T10:00:00Z');
SELECT ctxgraph.save_attempt('cve', 'cve-run-1', 'CVE-2026-0001', 1) AS attempt_cve \gset
SELECT ctxgraph.update_retrieval_attempt_ids('cve',
         ARRAY(SELECT id FROM cve.tip_retrievals), :attempt_cve);
SELECT ctxgraph.record_outcome('cve', :attempt_cve, false, 'clean_failure');

UPDATE stig.tip_retrievals
   SET tip_followed_llm = (tip_id = 9001), tip_followed_emb = 0.42,
       tip_followed_computed_at = '2026-05-10T00:00:00Z';
UPDATE ctxgraph.runs SET started_at = '2026-05-01T00:00:00Z';
COMMIT;
