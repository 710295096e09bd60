-- Revert ctxgraph:function_follow_label_metrics from pg

BEGIN;

DROP FUNCTION ctxgraph.follow_label_metrics(text, bigint[], boolean[]);

COMMIT;
