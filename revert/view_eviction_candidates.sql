-- Revert ctxgraph:view_eviction_candidates from pg

BEGIN;

DO $$ BEGIN PERFORM ctxgraph.unexpose_skill_view('eviction_candidates'); END $$;
DROP VIEW ctxgraph.eviction_candidates;

COMMIT;
