-- Revert ctxgraph:view_scored_retrievals from pg

BEGIN;

DO $$ BEGIN PERFORM ctxgraph.unexpose_skill_view('scored_retrievals'); END $$;
DROP VIEW ctxgraph.scored_retrievals;

COMMIT;
