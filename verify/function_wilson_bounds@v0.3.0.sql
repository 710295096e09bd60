-- Verify ctxgraph:function_wilson_bounds on pg

SELECT 'ctxgraph.wilson_lower(double precision, double precision, double precision)'::regprocedure;
SELECT 'ctxgraph.wilson_upper(double precision, double precision, double precision)'::regprocedure;
SELECT 1 / (COUNT(*) = 4)::int FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_writer', 'ctxgraph_scorer', 'ctxgraph_ranker', 'ctxgraph_analyst')
   AND pg_catalog.has_function_privilege(r.oid, 'ctxgraph.wilson_lower(double precision, double precision, double precision)', 'EXECUTE')
   AND pg_catalog.has_function_privilege(r.oid, 'ctxgraph.wilson_upper(double precision, double precision, double precision)', 'EXECUTE');

-- Known values, computed by hand from (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n):
--   p 0.5, n 100, z 1.96: 0.403830 / 0.596170     p 0, n 3, z 1: 0 / 0.25     p 1, n 3, z 1: 0.75 / 1
--   p 0.2, n 2.5, z 1 (a fractional, follow-weighted n): 0.055364 / 0.516065
-- p outside [0, 1] is clipped; n of 0 or NULL gives NULL.
SELECT 1 / (COUNT(*) = COUNT(*) FILTER (WHERE ok IS TRUE))::int
  FROM (VALUES
      (abs(ctxgraph.wilson_lower(0.5, 100, 1.96) - 0.403830) < 1e-6),
      (abs(ctxgraph.wilson_upper(0.5, 100, 1.96) - 0.596170) < 1e-6),
      (abs(ctxgraph.wilson_lower(0.0, 3, 1.0)) < 1e-12),
      (abs(ctxgraph.wilson_upper(0.0, 3, 1.0) - 0.25) < 1e-12),
      (abs(ctxgraph.wilson_lower(1.0, 3, 1.0) - 0.75) < 1e-12),
      (abs(ctxgraph.wilson_upper(1.0, 3, 1.0) - 1.0) < 1e-12),
      (abs(ctxgraph.wilson_lower(0.2, 2.5, 1.0) - 0.055364) < 1e-6),
      (abs(ctxgraph.wilson_upper(0.2, 2.5, 1.0) - 0.516065) < 1e-6),
      (ctxgraph.wilson_upper(1.3, 3, 1.0) = ctxgraph.wilson_upper(1.0, 3, 1.0)),
      (ctxgraph.wilson_lower(-0.2, 3, 1.0) = ctxgraph.wilson_lower(0.0, 3, 1.0)),
      (ctxgraph.wilson_lower(0.5, 0, 1.0) IS NULL),
      (ctxgraph.wilson_upper(0.5, NULL, 1.0) IS NULL)
  ) AS v (ok);
