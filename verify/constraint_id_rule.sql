-- Verify ctxgraph:constraint_id_rule on pg

BEGIN;

-- Each parent holds its check, and so does every skill's partition of it.
SELECT 1 / (count(*) = 4)::integer
  FROM pg_catalog.pg_constraint
 WHERE contype = 'c'
   AND (conrelid, conname) IN (('ctxgraph.runs'::regclass, 'runs_id_rule'), ('ctxgraph.attempts'::regclass, 'attempts_id_rule'),
                               ('ctxgraph.tips'::regclass, 'tips_id_rule'),
                               ('ctxgraph.tip_retrievals'::regclass, 'retrievals_id_rule'));
SELECT 1 / (count(*) = 0)::integer
  FROM (VALUES ('ctxgraph.runs'::regclass, 'runs_id_rule'), ('ctxgraph.attempts'::regclass, 'attempts_id_rule'),
               ('ctxgraph.tips'::regclass, 'tips_id_rule'), ('ctxgraph.tip_retrievals'::regclass, 'retrievals_id_rule')) AS k (parent, conname)
  JOIN pg_catalog.pg_inherits AS i ON i.inhparent = k.parent
 WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint AS c
                    WHERE c.conrelid = i.inhrelid AND c.conname = k.conname);
SELECT 1 / has_function_privilege('ctxgraph_scorer', 'ctxgraph._id_problem(text, text)', 'EXECUTE')::integer;

ROLLBACK;
