-- Revert ctxgraph:index_partition_ids from pg

BEGIN;

DROP INDEX ctxgraph.tip_retrievals_id_idx;
DROP INDEX ctxgraph.tips_id_idx;
DROP INDEX ctxgraph.attempts_id_idx;
DROP INDEX ctxgraph.runs_id_idx;

COMMIT;
