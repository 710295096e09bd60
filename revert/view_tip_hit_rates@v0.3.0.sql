-- Revert ctxgraph:view_tip_hit_rates from pg

BEGIN;

DO $$ BEGIN PERFORM ctxgraph.unexpose_skill_view('tip_hit_rates'); END $$;
DROP VIEW ctxgraph.tip_hit_rates;
DELETE FROM ctxgraph.parameters WHERE name = 'utility.bound_z';

COMMIT;
