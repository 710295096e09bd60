-- Revert ctxgraph:table_tip_stats from pg

BEGIN;

DROP TRIGGER tip_stats_after_update ON ctxgraph.parameters;
DROP TRIGGER tip_stats_after_update ON ctxgraph.failure_modes;
DROP FUNCTION ctxgraph._tip_stats_after_failure_modes_change();
-- CASCADE removes exactly the statement triggers that ensure_skill_partitions copied onto each
-- skill partition (and the parents' own), all of which call these functions.
DROP FUNCTION ctxgraph._tip_stats_after_retrievals_change() CASCADE;
DROP FUNCTION ctxgraph._tip_stats_after_attempts_update() CASCADE;
DROP FUNCTION ctxgraph._tip_stats_after_parameters_change();
DROP FUNCTION ctxgraph.refresh_tip_stats(text, bigint[]);
DROP TABLE ctxgraph.tip_stats;

COMMIT;
