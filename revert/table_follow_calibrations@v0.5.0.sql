-- Revert ctxgraph:table_follow_calibrations from pg

BEGIN;

DROP FUNCTION ctxgraph.current_follow_calibration(text, text);
DROP FUNCTION ctxgraph.save_follow_calibration(text, text, text, text[], double precision[], double precision, text, text,
                                               integer, integer, double precision, double precision, integer,
                                               double precision, double precision, double precision);
DROP TABLE ctxgraph.follow_calibrations;

COMMIT;
