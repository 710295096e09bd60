-- Revert ctxgraph:function_ingest_run_log from pg

BEGIN;

DROP FUNCTION ctxgraph.ingest_run_log(text);
DROP FUNCTION ctxgraph.ingest_staging();

COMMIT;
