-- Verify ctxgraph:table_tip_effects on pg

SELECT skill, tip_id, effect, std_error, lower_bound, upper_bound, attempts, followed_attempts, co_followed_tips, component_tips,
       method, fitted_at, as_of, parameters, misleading_probability, evidence_version
  FROM ctxgraph.tip_effects WHERE FALSE;
SELECT 1 / (count(*) = 5)::int FROM ctxgraph.parameters
 WHERE name IN ('effects.ridge_lambda', 'effects.bound_z', 'effects.max_component_tips', 'effects.max_iterations',
                'effects.harmful_below');
-- The PL/pgSQL fit is gone; the guard its temporary tables needed stays (others use it).
SELECT 1 / (NOT EXISTS (SELECT 1 FROM pg_catalog.pg_proc
                         WHERE pronamespace = 'ctxgraph'::regnamespace
                           AND proname IN ('refresh_tip_effects', '_fit_tip_blame', '_blame_mean_field', '_ridge_step',
                                           '_ridge_solve', '_follow_chance', '_aitken_step', '_aitken_share',
                                           '_aitken_mixture')))::int;
SELECT 'ctxgraph._refuse_foreign_temp_objects(text[])'::regprocedure;
