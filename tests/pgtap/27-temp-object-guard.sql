-- No owner-run function acts on a temporary object the caller made first. A temporary table is
-- looked up by name in the caller's own session: a writer that made pg_temp.ctxgraph_run_log
-- itself, with a BEFORE TRUNCATE trigger running ALTER ROLE ... SUPERUSER, became superuser when
-- ingest_staging (SECURITY DEFINER) emptied it; the scorer could do the same through
-- scoring_results (write_scoring_results), and the writer and the scorer through the fit's staging
-- table, ctxgraph_tip_fit (tip_fit_staging, write_tip_fit). Every function that makes or reads a
-- temporary table calls ctxgraph._refuse_foreign_temp_objects first with every name it uses; each
-- entry point is attacked as each role (temp_object_attack.psql) and fails cleanly with the role
-- no superuser. And the fit reads its evidence as stored numbers, so no caller's setting steers it.
BEGIN;
SELECT plan(31);

SELECT tests.make_tip('stig', 'V-1', 'A: set PASS_MAX_DAYS 60') AS tip_a \gset
SELECT tests.make_attempt_with_retrievals('stig', 'run-g', 'V-1', 1, ARRAY[:tip_a]::bigint[], false,
                                          'clean_failure') AS att_g \gset
SELECT ctxgraph.begin_scoring_pass() AS pass \gset

-- Every temporary name a ctxgraph function makes or reads, from the functions' own sources, and
-- the functions that use them.
CREATE TEMP TABLE temp_users AS
SELECT p.oid::regprocedure AS fn, m.name
  FROM pg_catalog.pg_proc AS p
 CROSS JOIN LATERAL (SELECT DISTINCT x[1] AS name
                       FROM regexp_matches(p.prosrc, '(?:pg_temp\.|TEMP(?:ORARY)? TABLE (?:IF NOT EXISTS )?(?:pg_temp\.)?)(\w+)',
                                           'gi') AS x) AS m
 WHERE p.pronamespace = 'ctxgraph'::regnamespace AND p.prosrc ~* '(pg_temp\.|temp(orary)? table)';
CREATE TEMP TABLE guarded_names AS SELECT DISTINCT u.name FROM temp_users AS u;
GRANT SELECT ON pg_temp.guarded_names TO PUBLIC;

-- ---------------------------------------------------------------------------------------------
-- Every such function guards every name it uses (2)
-- ---------------------------------------------------------------------------------------------
SELECT set_eq($$SELECT DISTINCT fn::text FROM temp_users$$,
              ARRAY['ctxgraph.ingest_run_log(text)', 'ctxgraph.ingest_staging()',
                    'ctxgraph.write_scoring_results(text,uuid,jsonb)',
                    'ctxgraph.tip_fit_staging()', 'ctxgraph.write_tip_fit(text,timestamp with time zone,numeric,jsonb,jsonb)'],
              'the functions that make or read temporary tables are the five this file attacks');
SELECT is_empty($$SELECT u.fn::text || ': ' || u.name
                    FROM temp_users AS u JOIN pg_catalog.pg_proc AS p ON p.oid = u.fn
                   WHERE NOT EXISTS (SELECT 1
                                       FROM regexp_matches(p.prosrc, '_refuse_foreign_temp_objects\(([^;]*)\);') AS g
                                      WHERE g[1] ~ ('''' || u.name || ''''))$$,
                'each of them calls _refuse_foreign_temp_objects with every temporary name it uses');

-- ---------------------------------------------------------------------------------------------
-- Each entry point attacked as each role (4 x 6)
-- ---------------------------------------------------------------------------------------------
-- The entry points a role can reach these functions through, each called so that it would use its
-- temporary tables, and the first name it guards.
CREATE TEMP TABLE entry_points (n integer, entry regprocedure, call text, first_name text);
INSERT INTO entry_points VALUES
    (1, 'ctxgraph.ingest_staging()', 'SELECT ctxgraph.ingest_staging()', 'ctxgraph_run_log'),
    (2, 'ctxgraph.ingest_run_log(text)', $$SELECT * FROM ctxgraph.ingest_run_log('stig')$$, 'ctxgraph_run_log'),
    (3, 'ctxgraph.write_scoring_results(text, uuid, jsonb)',
        format($$SELECT * FROM ctxgraph.write_scoring_results('stig', %L, '[]')$$, :'pass'), 'scoring_results'),
    (4, 'ctxgraph.tip_fit_staging()', 'SELECT ctxgraph.tip_fit_staging()', 'ctxgraph_tip_fit'),
    (5, 'ctxgraph.write_tip_fit(text, timestamptz, numeric, jsonb, jsonb)',
        $$SELECT ctxgraph.write_tip_fit('stig', '2026-11-30 00:00+00', 0, '{}', '{}')$$, 'ctxgraph_tip_fit');
GRANT SELECT ON pg_temp.entry_points TO PUBLIC;

-- What a clean failure says: the guard's refusal of the caller's table where the role may run the
-- function, the ordinary permission error where it may not.
CREATE FUNCTION pg_temp.expected_refusal(entry regprocedure, name text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN has_function_privilege(current_user, entry, 'EXECUTE')
                THEN format('ctxgraph: pg_temp.%s belongs to role %s, not to %s: drop it, then call again',
                            name, current_user, pg_get_userbyid(p.proowner))
                ELSE format('permission denied for function %s', p.proname)
           END
      FROM pg_catalog.pg_proc AS p WHERE p.oid = entry
$$;

\set attacker ctxgraph_writer
\ir temp_object_attack.psql
\set attacker ctxgraph_scorer
\ir temp_object_attack.psql
\set attacker ctxgraph_ranker
\ir temp_object_attack.psql
\set attacker ctxgraph_analyst
\ir temp_object_attack.psql

-- ---------------------------------------------------------------------------------------------
-- A type of a guarded name is refused too; the caller's own objects are its own again (4)
-- ---------------------------------------------------------------------------------------------
SET LOCAL ROLE ctxgraph_scorer;
CREATE TYPE pg_temp.ctxgraph_tip_fit AS (x integer);
SELECT throws_ok($$SELECT ctxgraph.tip_fit_staging()$$, '42501',
                 'ctxgraph: pg_temp.ctxgraph_tip_fit belongs to role ctxgraph_scorer, not to '
                 || (SELECT pg_get_userbyid(p.proowner) FROM pg_proc AS p
                      WHERE p.oid = 'ctxgraph.tip_fit_staging()'::regprocedure)
                 || ': drop it, then call again',
                 'scorer: a type of its own named like the fit''s staging table is refused as well (42501)');
DROP TYPE pg_temp.ctxgraph_tip_fit;
SELECT is(ctxgraph.tip_fit_staging(), 'pg_temp.ctxgraph_tip_fit',
          'scorer: with its own objects dropped, tip_fit_staging makes the staging table itself');
RESET ROLE;
SET LOCAL ROLE ctxgraph_writer;
CREATE TEMP TABLE ctxgraph_run_log (line bigint);
SELECT throws_ok($$SELECT ctxgraph.ingest_staging()$$, '42501', NULL,
                 'writer: a plain staging table of its own, without a trigger, is refused all the same');
DROP TABLE pg_temp.ctxgraph_run_log;
SELECT is(ctxgraph.ingest_staging(), 'pg_temp.ctxgraph_run_log',
          'writer: ingest_staging then makes the staging table itself');
RESET ROLE;

-- ---------------------------------------------------------------------------------------------
-- Nor does a caller's setting steer the fit (1)
-- ---------------------------------------------------------------------------------------------
-- The fit groups tips by their weights, compared as floats. Read as text, the weights would be
-- what the session's extra_float_digits prints (at -15, 1/6 and 1/5 both print 0.2, and two tips
-- would merge); fit_evidence answers in fixed-width numbers only, which the fit reads by a binary
-- COPY as they are stored.
SELECT is_empty($$SELECT a.name || ' ' || format_type(a.type, NULL)
                    FROM pg_catalog.pg_proc AS p
                   CROSS JOIN LATERAL unnest(p.proallargtypes, p.proargmodes, p.proargnames) AS a (type, mode, name)
                    JOIN pg_catalog.pg_type AS t ON t.oid = a.type
                   WHERE p.oid = 'ctxgraph.fit_evidence(text, timestamptz)'::regprocedure AND a.mode = 't'
                     AND (t.typlen < 0 OR t.typcategory <> 'N')$$,
                'fit_evidence answers in fixed-width numbers only: nothing the fit reads is text a session''s settings print');

SELECT * FROM finish();
ROLLBACK;
