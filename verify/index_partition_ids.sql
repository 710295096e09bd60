-- Verify ctxgraph:index_partition_ids on pg

BEGIN;

-- Each parent has an index that leads with id, and every partition of it has its copy.
SELECT 1 / (count(*) = 4)::integer
  FROM pg_catalog.pg_index AS i
 WHERE i.indexrelid IN ('ctxgraph.runs_id_idx'::regclass, 'ctxgraph.attempts_id_idx'::regclass,
                        'ctxgraph.tips_id_idx'::regclass, 'ctxgraph.tip_retrievals_id_idx'::regclass)
   AND (SELECT a.attname FROM pg_catalog.pg_attribute AS a
         WHERE a.attrelid = i.indrelid AND a.attnum = i.indkey[0]) = 'id';
SELECT 1 / (count(*) = 0)::integer
  FROM pg_catalog.pg_inherits AS t
 WHERE t.inhparent IN ('ctxgraph.runs'::regclass, 'ctxgraph.attempts'::regclass, 'ctxgraph.tips'::regclass,
                       'ctxgraph.tip_retrievals'::regclass)
   AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_index AS i
                     JOIN pg_catalog.pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                    WHERE i.indrelid = t.inhrelid AND a.attname = 'id');

ROLLBACK;
