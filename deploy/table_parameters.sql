-- Deploy ctxgraph:table_parameters to pg
-- requires: schema_ctxgraph

-- Every coefficient and threshold lives here, read by the SQL that uses it, so tuning is an
-- UPDATE (visible in one place) rather than an edit to a view. Each change that introduces a
-- coefficient inserts its default and deletes it again on revert.
BEGIN;

CREATE TABLE ctxgraph.parameters (
    name        text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$'),
    value       double precision NOT NULL CHECK (value <> 'NaN'::double precision),
    description text NOT NULL CHECK (btrim(description) <> ''),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE ctxgraph.parameters IS
    'Every coefficient and threshold ctxgraph uses (graded outcomes, follow weights, eviction), one row each.';
COMMENT ON COLUMN ctxgraph.parameters.name IS 'Dotted name, e.g. outcome.pass.first_attempt.';
COMMENT ON COLUMN ctxgraph.parameters.value IS 'The value in force; never NaN.';
COMMENT ON COLUMN ctxgraph.parameters.description IS 'What the value means and where it comes from.';
COMMENT ON COLUMN ctxgraph.parameters.updated_at IS 'When the value was last set.';

GRANT SELECT ON ctxgraph.parameters TO ctxgraph_writer, ctxgraph_scorer, ctxgraph_ranker, ctxgraph_analyst;

-- ctxgraph.param(name): the value of one parameter; a missing name is an error, never a silent NULL.
CREATE FUNCTION ctxgraph.param(name text)
RETURNS double precision
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
#variable_conflict use_column
DECLARE
    result double precision;
BEGIN
    SELECT p.value INTO result FROM ctxgraph.parameters AS p WHERE p.name = param.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ctxgraph: no parameter named %', coalesce(quote_literal(param.name), 'NULL')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'SELECT name FROM ctxgraph.parameters lists the known parameters.';
    END IF;
    RETURN result;
END
$$;

COMMENT ON FUNCTION ctxgraph.param(text) IS
    'The value of one row of ctxgraph.parameters; raises 22023 for an unknown name.';

GRANT EXECUTE ON FUNCTION ctxgraph.param(text) TO ctxgraph_writer, ctxgraph_scorer, ctxgraph_ranker, ctxgraph_analyst;

COMMIT;
