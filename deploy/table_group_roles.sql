-- Deploy ctxgraph:table_group_roles to pg
-- requires: roles
-- requires: schema_ctxgraph

-- The four group roles by what they do, named in one place. Code that grants (deploy scripts
-- after this change, add_skill) asks ctxgraph._grant() for "the ranker and the analyst" rather
-- than spelling role names, so renaming a role is one UPDATE here plus ALTER ROLE.
BEGIN;

CREATE TABLE ctxgraph.group_roles (
    kind      text PRIMARY KEY CHECK (kind IN ('writer', 'scorer', 'ranker', 'analyst')),
    role_name name NOT NULL UNIQUE
);

COMMENT ON TABLE ctxgraph.group_roles IS
    'The ctxgraph group roles by kind: writer (the agent''s write path), scorer (the scoring pass), ranker (views and ranking), analyst (read-only).';
COMMENT ON COLUMN ctxgraph.group_roles.kind IS 'What the role is for.';
COMMENT ON COLUMN ctxgraph.group_roles.role_name IS 'The NOLOGIN group role that holds the privileges of that kind.';

INSERT INTO ctxgraph.group_roles (kind, role_name) VALUES
    ('writer',  'ctxgraph_writer'),
    ('scorer',  'ctxgraph_scorer'),
    ('ranker',  'ctxgraph_ranker'),
    ('analyst', 'ctxgraph_analyst');

-- _roles: the roles of the given kinds as a GRANT/REVOKE target list; an unknown kind is an error.
CREATE FUNCTION ctxgraph._roles(kinds text[])
RETURNS text
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    listed text;
BEGIN
    IF kinds IS NULL OR cardinality(kinds) = 0 THEN
        RAISE EXCEPTION 'ctxgraph: _roles needs at least one kind' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(kinds) AS k(kind)
                WHERE NOT EXISTS (SELECT 1 FROM ctxgraph.group_roles AS g WHERE g.kind = k.kind)) THEN
        RAISE EXCEPTION 'ctxgraph: unknown role kind in %', kinds
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'SELECT kind FROM ctxgraph.group_roles lists the kinds.';
    END IF;
    SELECT string_agg(pg_catalog.quote_ident(g.role_name), ', ' ORDER BY g.role_name) INTO listed
      FROM ctxgraph.group_roles AS g
     WHERE g.kind = ANY (kinds);
    RETURN listed;
END
$$;

-- _grant / _revoke: GRANT <what> TO the roles of the given kinds (REVOKE ... FROM them).
CREATE FUNCTION ctxgraph._grant(what text, kinds text[])
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    EXECUTE format('GRANT %s TO %s', what, ctxgraph._roles(kinds));
END
$$;

CREATE FUNCTION ctxgraph._revoke(what text, kinds text[])
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    EXECUTE format('REVOKE %s FROM %s', what, ctxgraph._roles(kinds));
END
$$;

COMMENT ON FUNCTION ctxgraph._roles(text[]) IS 'Private: the group roles of the given kinds, quoted and comma-separated; raises 22023 for an unknown kind.';
COMMENT ON FUNCTION ctxgraph._grant(text, text[]) IS 'Private: GRANT <what> TO the group roles of the given kinds (deploy scripts only).';
COMMENT ON FUNCTION ctxgraph._revoke(text, text[]) IS 'Private: REVOKE <what> FROM the group roles of the given kinds (revert scripts only).';

REVOKE ALL ON FUNCTION ctxgraph._roles(text[]), ctxgraph._grant(text, text[]), ctxgraph._revoke(text, text[]) FROM PUBLIC;

DO $$ BEGIN PERFORM ctxgraph._grant('SELECT ON ctxgraph.group_roles', '{analyst}'); END $$;

COMMIT;
