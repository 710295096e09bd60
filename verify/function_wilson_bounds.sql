-- Verify ctxgraph:function_wilson_bounds on pg

SELECT 1 / (ctxgraph.wilson_lower(0.5, 100, 1.96) BETWEEN 0.40 AND 0.41)::int;
SELECT 1 / (ctxgraph.wilson_upper(0.0, 3, 1.0) BETWEEN 0.2499 AND 0.2501)::int;
