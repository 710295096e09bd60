-- Revert ctxgraph:view_misleading_tips from pg

BEGIN;

DO $$ BEGIN PERFORM ctxgraph.unexpose_skill_view('misleading_tips'); END $$;
DROP VIEW ctxgraph.misleading_tips;
DELETE FROM ctxgraph.parameters WHERE name LIKE 'misleading.%';

COMMIT;
