-- Revert ctxgraph:function_cascade_track_record from pg

BEGIN;

DROP FUNCTION ctxgraph.cascade_track_record(text, bigint, text, text, double precision, double precision, text);

COMMIT;
