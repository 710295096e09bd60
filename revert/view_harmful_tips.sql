-- Revert ctxgraph:view_harmful_tips from pg

BEGIN;

DO $$ BEGIN PERFORM ctxgraph.unexpose_skill_view('harmful_tips'); END $$;
DROP VIEW ctxgraph.harmful_tips;

COMMIT;
