-- Verify ctxgraph:table_parameters on pg

SELECT name, value, description, updated_at FROM ctxgraph.parameters WHERE FALSE;
SELECT 'ctxgraph.param(text)'::regprocedure;

-- Every group role reads the parameters and calls param(), but only the owner tunes them.
SELECT 1 / (COUNT(*) = 4)::int
  FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_writer', 'ctxgraph_scorer', 'ctxgraph_ranker', 'ctxgraph_analyst')
   AND pg_catalog.has_table_privilege(r.oid, 'ctxgraph.parameters', 'SELECT')
   AND NOT pg_catalog.has_table_privilege(r.oid, 'ctxgraph.parameters', 'INSERT, UPDATE, DELETE')
   AND pg_catalog.has_function_privilege(r.oid, 'ctxgraph.param(text)', 'EXECUTE');

-- Behaviour, on a probe row that is rolled back: param() returns the row's value, an unknown
-- name raises 22023 (never a silent NULL), and NaN or a malformed name is refused.
BEGIN;
INSERT INTO ctxgraph.parameters (name, value, description) VALUES ('sqitch_verify.probe', 0.25, 'verify probe');
SELECT 1 / (ctxgraph.param('sqitch_verify.probe') = 0.25)::int;
DO $$
DECLARE
    probe record;
BEGIN
    FOR probe IN SELECT * FROM (VALUES
        ('22023', $q$SELECT ctxgraph.param('sqitch_verify.no_such_parameter')$q$),
        ('22023', $q$SELECT ctxgraph.param(NULL)$q$),
        ('23514', $q$INSERT INTO ctxgraph.parameters (name, value, description) VALUES ('sqitch_verify.nan', 'NaN', 'x')$q$),
        ('23514', $q$INSERT INTO ctxgraph.parameters (name, value, description) VALUES ('Bad Name', 1, 'x')$q$),
        ('23514', $q$INSERT INTO ctxgraph.parameters (name, value, description) VALUES ('sqitch_verify.blank', 1, ' ')$q$)
    ) AS p (sqlstate, statement) LOOP
        BEGIN
            EXECUTE probe.statement;
            RAISE EXCEPTION 'no error' USING ERRCODE = 'VRFY1';
        EXCEPTION WHEN OTHERS THEN
            IF SQLSTATE <> probe.sqlstate THEN
                RAISE EXCEPTION 'expected SQLSTATE % from %, got % (%)', probe.sqlstate, probe.statement, SQLSTATE, SQLERRM;
            END IF;
        END;
    END LOOP;
END
$$;
ROLLBACK;
