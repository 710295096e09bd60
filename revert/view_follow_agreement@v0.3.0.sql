-- Revert ctxgraph:view_follow_agreement from pg

BEGIN;

DO $$ BEGIN PERFORM ctxgraph.unexpose_skill_view('follow_agreement'); END $$;
DROP VIEW ctxgraph.follow_agreement;
DROP FUNCTION ctxgraph.cohen_kappa(bigint, bigint, bigint, bigint);

COMMIT;
