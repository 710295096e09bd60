-- Revert ctxgraph:function_wilson_bounds from pg

BEGIN;

DROP FUNCTION ctxgraph.wilson_upper(double precision, double precision, double precision);
DROP FUNCTION ctxgraph.wilson_lower(double precision, double precision, double precision);

COMMIT;
