-- Deploy ctxgraph:skill_stig to pg
-- requires: skill_provisioning

BEGIN;

DO $$ BEGIN PERFORM ctxgraph.add_skill('stig', 'graded', 'STIG hardening rules: graded outcomes (ADR-0019 DEF-26).'); END $$;

COMMIT;
