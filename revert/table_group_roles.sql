-- Revert ctxgraph:table_group_roles from pg

BEGIN;

DROP FUNCTION ctxgraph._revoke(text, text[]);
DROP FUNCTION ctxgraph._grant(text, text[]);
DROP FUNCTION ctxgraph._roles(text[]);
DROP TABLE ctxgraph.group_roles;

COMMIT;
