-- Verify ctxgraph:table_group_roles on pg

SELECT kind, role_name FROM ctxgraph.group_roles WHERE FALSE;
-- Every kind names a role that exists.
SELECT 1 / (count(*) = 4)::int
  FROM ctxgraph.group_roles AS g
  JOIN pg_catalog.pg_roles AS r ON r.rolname = g.role_name
 WHERE g.kind IN ('writer', 'scorer', 'ranker', 'analyst');
-- _roles lists the asked kinds in name order and refuses an unknown kind.
SELECT 1 / (ctxgraph._roles('{ranker,analyst}') =
            (SELECT string_agg(quote_ident(role_name), ', ' ORDER BY role_name)
               FROM ctxgraph.group_roles WHERE kind IN ('ranker', 'analyst')))::int;
DO $$
BEGIN
    PERFORM ctxgraph._roles('{nosuchkind}');
    RAISE EXCEPTION 'verify: _roles accepted an unknown kind';
EXCEPTION WHEN invalid_parameter_value THEN NULL;
END
$$;
SELECT 1 / (NOT has_function_privilege('ctxgraph_writer', 'ctxgraph._grant(text, text[])', 'EXECUTE'))::int;
SELECT 1 / has_table_privilege('ctxgraph_analyst', 'ctxgraph.group_roles', 'SELECT')::int;
