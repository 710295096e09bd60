-- Verify ctxgraph:function_wilson_bounds on pg

-- p = 0.5, n = 10, z = 1.96: the Wilson interval is 0.2366 .. 0.7634 (by hand).
SELECT 1 / (abs(ctxgraph.wilson_lower(0.5, 10, 1.96) - 0.2366) < 1e-3)::int;
SELECT 1 / (abs(ctxgraph.wilson_upper(0.5, 10, 1.96) - 0.7634) < 1e-3)::int;
-- Clipped to [0, 1] at the edges; no evidence gives no bound.
SELECT 1 / (ctxgraph.wilson_lower(0, 5, 1) >= 0 AND ctxgraph.wilson_upper(1, 5, 1) <= 1)::int;
SELECT 1 / (ctxgraph.wilson_lower(-0.2, 5, 1) >= 0 AND ctxgraph.wilson_upper(1.5, 5, 1) <= 1)::int;
SELECT 1 / (ctxgraph.wilson_lower(0.5, 0, 1) IS NULL AND ctxgraph.wilson_upper(0.5, NULL, 1) IS NULL)::int;
