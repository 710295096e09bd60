-- No owner-run function acts on a temporary object the caller made first. A temporary table is
-- looked up by name in the caller's own session: a writer that made pg_temp.ctxgraph_run_log
-- itself, with a BEFORE TRUNCATE trigger running ALTER ROLE ... SUPERUSER, became superuser when
-- ingest_staging (SECURITY DEFINER) emptied it; the scorer the same through scoring_results
-- (write_scoring_results), the writer through the effects fit's tables (refresh_tip_effects, so
-- ensure_tip_effects and evict_tips); the numpy fit's staging table (tip_fit_staging,
-- write_tip_fit) is guarded the same way. Every function that makes or reads a temporary table now
-- calls ctxgraph._refuse_foreign_temp_objects first with every name it uses; each entry point is
-- attacked as each role (temp_object_attack.psql) and fails cleanly with the role no superuser.
BEGIN;
SELECT plan(43);

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
              ARRAY['ctxgraph._blame_mean_field(double precision,double precision,double precision,integer)',
                    'ctxgraph._fit_tip_blame(text,timestamp with time zone)',
                    'ctxgraph.ingest_run_log(text)', 'ctxgraph.ingest_staging()',
                    'ctxgraph.refresh_tip_effects(text,timestamp with time zone)',
                    'ctxgraph.write_scoring_results(text,uuid,jsonb)',
                    'ctxgraph.tip_fit_staging()', 'ctxgraph.write_tip_fit(text,timestamp with time zone,numeric,jsonb,jsonb)'],
              'the functions that make or read temporary tables are the eight this file attacks');
SELECT is_empty($$SELECT u.fn::text || ': ' || u.name
                    FROM temp_users AS u JOIN pg_catalog.pg_proc AS p ON p.oid = u.fn
                   WHERE NOT EXISTS (SELECT 1
                                       FROM regexp_matches(p.prosrc, '_refuse_foreign_temp_objects\(([^;]*)\);') AS g
                                      WHERE g[1] ~ ('''' || u.name || ''''))$$,
                'each of them calls _refuse_foreign_temp_objects with every temporary name it uses');

-- ---------------------------------------------------------------------------------------------
-- Each entry point attacked as each role (4 x 9)
-- ---------------------------------------------------------------------------------------------
-- The entry points a role can reach these functions through, each called so that it would use its
-- temporary tables (a fit as of an instant no fit was made for), and the first name it guards.
CREATE TEMP TABLE entry_points (n integer, entry regprocedure, call text, first_name text);
INSERT INTO entry_points VALUES
    (1, 'ctxgraph.ingest_staging()', 'SELECT ctxgraph.ingest_staging()', 'ctxgraph_run_log'),
    (2, 'ctxgraph.ingest_run_log(text)', $$SELECT * FROM ctxgraph.ingest_run_log('stig')$$, 'ctxgraph_run_log'),
    (3, 'ctxgraph.write_scoring_results(text, uuid, jsonb)',
        format($$SELECT * FROM ctxgraph.write_scoring_results('stig', %L, '[]')$$, :'pass'), 'scoring_results'),
    (4, 'ctxgraph.refresh_tip_effects(text, timestamptz)',
        $$SELECT ctxgraph.refresh_tip_effects('stig', '2026-11-30 00:00+00')$$, 'effect_units'),
    (5, 'ctxgraph.ensure_tip_effects(text, timestamptz)',
        $$SELECT ctxgraph.ensure_tip_effects('stig', '2026-11-30 00:00+00')$$, 'effect_units'),
    (6, 'ctxgraph.evict_tips(text, timestamptz, boolean)',
        $$SELECT * FROM ctxgraph.evict_tips('stig', '2026-11-30 00:00+00', true)$$, 'effect_units'),
    (7, 'ctxgraph.tip_fit_staging()', 'SELECT ctxgraph.tip_fit_staging()', 'ctxgraph_tip_fit'),
    (8, 'ctxgraph.write_tip_fit(text, timestamptz, numeric, jsonb, jsonb)',
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
SET LOCAL ROLE ctxgraph_writer;
CREATE TYPE pg_temp.effect_units AS (x integer);
SELECT throws_ok($$SELECT ctxgraph.refresh_tip_effects('stig', '2026-11-30 00:00+00')$$, '42501',
                 'ctxgraph: pg_temp.effect_units belongs to role ctxgraph_writer, not to '
                 || (SELECT pg_get_userbyid(p.proowner) FROM pg_proc AS p
                      WHERE p.oid = 'ctxgraph.refresh_tip_effects(text, timestamptz)'::regprocedure)
                 || ': drop it, then call again',
                 'writer: a type of its own named like a table of the fit is refused as well (42501)');
DROP TYPE pg_temp.effect_units;
SELECT lives_ok($$SELECT ctxgraph.refresh_tip_effects('stig', '2026-11-30 00:00+00')$$,
                'writer: with its own objects dropped, the fit runs');
CREATE TEMP TABLE ctxgraph_run_log (line bigint);
SELECT throws_ok($$SELECT ctxgraph.ingest_staging()$$, '42501', NULL,
                 'writer: a plain staging table of its own, without a trigger, is refused all the same');
DROP TABLE pg_temp.ctxgraph_run_log;
SELECT is(ctxgraph.ingest_staging(), 'pg_temp.ctxgraph_run_log',
          'writer: ingest_staging then makes the staging table itself');
RESET ROLE;

-- ---------------------------------------------------------------------------------------------
-- Nor does a caller's setting steer the owner-run fit (1)
-- ---------------------------------------------------------------------------------------------
-- The fit groups tips by their weights written out as text; extra_float_digits of -15 merged tips
-- weighing 1/6 and 1/5 in the same attempts. The fit pins it.
SELECT is_empty($$SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc AS p
                   WHERE p.oid IN ('ctxgraph.refresh_tip_effects(text, timestamptz)'::regprocedure,
                                   'ctxgraph._fit_tip_blame(text, timestamptz)'::regprocedure)
                     AND NOT p.proconfig @> ARRAY['extra_float_digits=1']$$,
                'refresh_tip_effects and _fit_tip_blame pin extra_float_digits: the caller''s cannot change the fit');

SELECT * FROM finish();
ROLLBACK;
