-- Deploy ctxgraph:skill_cve to pg
-- requires: skill_provisioning

BEGIN;

DO $$ BEGIN PERFORM ctxgraph.add_skill('cve', 'binary', 'CVE remediation: binary outcomes (its failures are mostly external).'); END $$;

COMMIT;
