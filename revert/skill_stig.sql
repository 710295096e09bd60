-- Revert ctxgraph:skill_stig from pg

BEGIN;

DO $$ BEGIN PERFORM ctxgraph.drop_skill('stig'); END $$;

COMMIT;
