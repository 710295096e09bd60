-- Revert ctxgraph:view_follow_anomalies from pg

BEGIN;

DO $$ BEGIN PERFORM ctxgraph.unexpose_skill_view('follow_anomalies'); END $$;
DROP VIEW ctxgraph.follow_anomalies;
DELETE FROM ctxgraph.parameters WHERE name LIKE 'anomaly.%';

COMMIT;
