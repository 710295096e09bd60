-- Revert ctxgraph:view_harmful_when_followed from pg

BEGIN;

DO $$ BEGIN PERFORM ctxgraph.unexpose_skill_view('harmful_when_followed'); END $$;
DROP VIEW ctxgraph.harmful_when_followed;

COMMIT;
