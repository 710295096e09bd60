-- Revert ctxgraph:table_skills from pg

BEGIN;

DROP TABLE ctxgraph.skills;

COMMIT;
