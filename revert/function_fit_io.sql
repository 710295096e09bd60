-- Revert ctxgraph:function_fit_io from pg

BEGIN;

DROP FUNCTION ctxgraph.write_tip_fit(text, timestamptz, numeric, jsonb, jsonb);
DROP FUNCTION ctxgraph.tip_fit_staging();
DROP FUNCTION ctxgraph.fit_evidence(text, timestamptz);
DROP FUNCTION ctxgraph.fit_snapshot(text);
ALTER TABLE ctxgraph.tip_effects DROP COLUMN evidence_version;

COMMIT;
