-- Verify ctxgraph:constraint_runs_ends_after_start on pg

BEGIN;

-- The parent and every skill's partition hold it.
SELECT 1 / count(*)
  FROM pg_catalog.pg_constraint
 WHERE conrelid = 'ctxgraph.runs'::regclass AND conname = 'runs_ends_after_start' AND contype = 'c'
   AND pg_catalog.pg_get_constraintdef(oid) = 'CHECK ((ended_at >= started_at))';
SELECT 1 / (count(*) = 0)::integer
  FROM pg_catalog.pg_inherits AS i
 WHERE i.inhparent = 'ctxgraph.runs'::regclass
   AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint AS c
                    WHERE c.conrelid = i.inhrelid AND c.conname = 'runs_ends_after_start');

ROLLBACK;
