-- Verify ctxgraph:constraint_finite_instants on pg

BEGIN;

-- Each parent holds its check, and so does every skill's partition of it.
SELECT 1 / (count(*) = 3)::integer
  FROM pg_catalog.pg_constraint
 WHERE contype = 'c'
   AND (conrelid, conname) IN (('ctxgraph.tip_retrievals'::regclass, 'retrievals_finite_instant'),
                               ('ctxgraph.attempts'::regclass, 'attempts_finite_instants'),
                               ('ctxgraph.runs'::regclass, 'runs_finite_instants'));
SELECT 1 / (count(*) = 0)::integer
  FROM (VALUES ('ctxgraph.tip_retrievals'::regclass, 'retrievals_finite_instant'),
               ('ctxgraph.attempts'::regclass, 'attempts_finite_instants'),
               ('ctxgraph.runs'::regclass, 'runs_finite_instants')) AS k (parent, conname)
  JOIN pg_catalog.pg_inherits AS i ON i.inhparent = k.parent
 WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint AS c
                    WHERE c.conrelid = i.inhrelid AND c.conname = k.conname);

ROLLBACK;
