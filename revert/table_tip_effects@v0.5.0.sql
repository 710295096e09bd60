-- Revert ctxgraph:table_tip_effects from pg

BEGIN;

DROP FUNCTION ctxgraph.refresh_tip_effects(text, timestamptz);
DROP FUNCTION ctxgraph._ridge_solve(double precision[], double precision[], integer);
DROP TABLE ctxgraph.tip_effects;
DELETE FROM ctxgraph.parameters
 WHERE name IN ('effects.ridge_lambda', 'effects.bound_z', 'effects.max_component_tips', 'effects.max_iterations',
                'effects.harmful_below');

COMMIT;
