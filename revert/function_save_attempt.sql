-- Revert ctxgraph:function_save_attempt from pg

-- Nothing to undo: the rework wrote the same grants through ctxgraph._grant and left every
-- definition as the earlier instance made it, so the database is already as @v0.7.0 left it.
BEGIN;
COMMIT;
