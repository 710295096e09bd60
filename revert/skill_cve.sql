-- Revert ctxgraph:skill_cve from pg

BEGIN;

DO $$ BEGIN PERFORM ctxgraph.drop_skill('cve'); END $$;

COMMIT;
