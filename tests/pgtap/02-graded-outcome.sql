-- ctxgraph.graded_outcome (ADR-0019 DEF-26): the table row by row for stig (graded) and cve
-- (binary), values read from ctxgraph.parameters, and every error with its SQLSTATE.
BEGIN;
SELECT plan(45);

-- ---------------------------------------------------------------------------------------------
-- The shipped defaults (1)
-- ---------------------------------------------------------------------------------------------
SELECT results_eq(
    $$SELECT name, value FROM ctxgraph.parameters WHERE name LIKE 'outcome.%' ORDER BY name$$,
    $$VALUES ('outcome.binary.fail',              0.0::double precision),
             ('outcome.binary.pass',              1.0),
             ('outcome.confidence',               1.0),
             ('outcome.fail.clean_failure',       0.0),
             ('outcome.fail.evaluator_gap',       0.0),
             ('outcome.fail.health_failure',     -0.2),
             ('outcome.pass.early',               0.8),
             ('outcome.pass.early_last_attempt',  3.0),
             ('outcome.pass.first_attempt',       1.0),
             ('outcome.pass.late',                0.5)$$,
    'the DEF-26 parameters ship with the ADR''s values');

-- ---------------------------------------------------------------------------------------------
-- stig: graded (11)
-- ---------------------------------------------------------------------------------------------
SELECT is(ctxgraph.graded_outcome('stig', true, 1),  1.0::double precision, 'stig: pass on attempt 1 is 1.0');
SELECT is(ctxgraph.graded_outcome('stig', true, 2),  0.8::double precision, 'stig: pass on attempt 2 is 0.8');
SELECT is(ctxgraph.graded_outcome('stig', true, 3),  0.8::double precision, 'stig: pass on attempt 3 is 0.8');
SELECT is(ctxgraph.graded_outcome('stig', true, 4),  0.5::double precision, 'stig: pass on attempt 4 is 0.5');
SELECT is(ctxgraph.graded_outcome('stig', true, 12), 0.5::double precision, 'stig: pass on attempt 12 is 0.5');
SELECT is(ctxgraph.graded_outcome('stig', false, 1, 'evaluator_gap'),  0.0::double precision, 'stig: evaluator_gap on attempt 1 is 0.0');
SELECT is(ctxgraph.graded_outcome('stig', false, 5, 'evaluator_gap'),  0.0::double precision, 'stig: evaluator_gap on attempt 5 is 0.0');
SELECT is(ctxgraph.graded_outcome('stig', false, 1, 'clean_failure'),  0.0::double precision, 'stig: clean_failure on attempt 1 is 0.0');
SELECT is(ctxgraph.graded_outcome('stig', false, 5, 'clean_failure'),  0.0::double precision, 'stig: clean_failure on attempt 5 is 0.0');
SELECT is(ctxgraph.graded_outcome('stig', false, 1, 'health_failure'), -0.2::double precision, 'stig: health_failure on attempt 1 is -0.2');
SELECT is(ctxgraph.graded_outcome('stig', false, 5, 'health_failure'), -0.2::double precision, 'stig: health_failure on attempt 5 is -0.2');

-- ---------------------------------------------------------------------------------------------
-- cve: binary (8). Attempt number and failure mode do not change the value; a mode is optional.
-- ---------------------------------------------------------------------------------------------
SELECT is(ctxgraph.graded_outcome('cve', true, 1),  1.0::double precision, 'cve: pass on attempt 1 is 1.0');
SELECT is(ctxgraph.graded_outcome('cve', true, 2),  1.0::double precision, 'cve: pass on attempt 2 is 1.0');
SELECT is(ctxgraph.graded_outcome('cve', true, 12), 1.0::double precision, 'cve: pass on attempt 12 is 1.0');
SELECT is(ctxgraph.graded_outcome('cve', false, 1, 'evaluator_gap'),  0.0::double precision, 'cve: evaluator_gap is 0.0');
SELECT is(ctxgraph.graded_outcome('cve', false, 1, 'clean_failure'),  0.0::double precision, 'cve: clean_failure is 0.0');
SELECT is(ctxgraph.graded_outcome('cve', false, 5, 'health_failure'), 0.0::double precision, 'cve: health_failure is 0.0 (no harm penalty for binary skills)');
SELECT is(ctxgraph.graded_outcome('cve', false, 12, 'clean_failure'), 0.0::double precision, 'cve: failure on attempt 12 is 0.0');
SELECT is(ctxgraph.graded_outcome('cve', false, 3), 0.0::double precision, 'cve: failure without a mode is 0.0');

-- ---------------------------------------------------------------------------------------------
-- Values follow ctxgraph.parameters (7): an UPDATE is seen by the next statement.
-- ---------------------------------------------------------------------------------------------
UPDATE ctxgraph.parameters SET value = 0.7 WHERE name = 'outcome.pass.early';
SELECT is(ctxgraph.param('outcome.pass.early'), 0.7::double precision, 'ctxgraph.param reads the updated value');
SELECT is(ctxgraph.graded_outcome('stig', true, 2), 0.7::double precision, 'stig: pass on attempt 2 follows outcome.pass.early (now 0.7)');

UPDATE ctxgraph.parameters SET value = 5 WHERE name = 'outcome.pass.early_last_attempt';
SELECT is(ctxgraph.graded_outcome('stig', true, 5), 0.7::double precision, 'stig: with early_last_attempt 5, a pass on attempt 5 is early');
SELECT is(ctxgraph.graded_outcome('stig', true, 6), 0.5::double precision, 'stig: with early_last_attempt 5, a pass on attempt 6 is late');

UPDATE ctxgraph.parameters SET value = -0.5 WHERE name = 'outcome.fail.health_failure';
SELECT is(ctxgraph.graded_outcome('stig', false, 1, 'health_failure'), -0.5::double precision, 'stig: health_failure follows its parameter (now -0.5)');

UPDATE ctxgraph.parameters SET value = 0.9 WHERE name = 'outcome.binary.pass';
SELECT is(ctxgraph.graded_outcome('cve', true, 1), 0.9::double precision, 'cve: a pass follows outcome.binary.pass (now 0.9)');

SELECT throws_ok($$UPDATE ctxgraph.parameters SET value = 'NaN' WHERE name = 'outcome.pass.late'$$,
                 '23514', NULL, 'a parameter cannot be set to NaN');

-- ---------------------------------------------------------------------------------------------
-- Errors (18): never a silent 0.
-- ---------------------------------------------------------------------------------------------
SELECT throws_ok($$SELECT ctxgraph.graded_outcome('nope', true, 1)$$,
                 '22023', 'ctxgraph: unknown skill ''nope''', 'unknown skill raises 22023');
SELECT throws_ok($$SELECT ctxgraph.graded_outcome(NULL, true, 1)$$,
                 '22004', 'ctxgraph: skill must not be NULL', 'NULL skill raises 22004');
SELECT throws_ok($$SELECT ctxgraph.graded_outcome('stig', NULL, 1)$$,
                 '22004', 'ctxgraph: passed must not be NULL', 'stig: NULL passed raises 22004');
SELECT throws_ok($$SELECT ctxgraph.graded_outcome('cve', NULL, 1)$$,
                 '22004', 'ctxgraph: passed must not be NULL', 'cve: NULL passed raises 22004');
SELECT throws_ok($$SELECT ctxgraph.graded_outcome('stig', true, NULL)$$,
                 '22004', 'ctxgraph: attempt_number must not be NULL', 'stig: NULL attempt_number raises 22004');
SELECT throws_ok($$SELECT ctxgraph.graded_outcome('cve', false, NULL)$$,
                 '22004', 'ctxgraph: attempt_number must not be NULL', 'cve: NULL attempt_number raises 22004');
SELECT throws_ok($$SELECT ctxgraph.graded_outcome('stig', true, 0)$$,
                 '22023', 'ctxgraph: attempt_number must be 1 or more, got 0', 'stig: attempt_number 0 raises 22023');
SELECT throws_ok($$SELECT ctxgraph.graded_outcome('stig', false, -1, 'clean_failure')$$,
                 '22023', 'ctxgraph: attempt_number must be 1 or more, got -1', 'stig: attempt_number -1 raises 22023');
SELECT throws_ok($$SELECT ctxgraph.graded_outcome('cve', true, 0)$$,
                 '22023', 'ctxgraph: attempt_number must be 1 or more, got 0', 'cve: attempt_number 0 raises 22023');
SELECT throws_ok($$SELECT ctxgraph.graded_outcome('cve', false, -1)$$,
                 '22023', 'ctxgraph: attempt_number must be 1 or more, got -1', 'cve: attempt_number -1 raises 22023');
SELECT throws_ok($$SELECT ctxgraph.graded_outcome('stig', false, 1, 'timeout')$$,
                 '22023', 'ctxgraph: unknown failure mode ''timeout''', 'stig: unknown failure mode raises 22023');
SELECT throws_ok($$SELECT ctxgraph.graded_outcome('cve', false, 1, 'timeout')$$,
                 '22023', 'ctxgraph: unknown failure mode ''timeout''', 'cve: unknown failure mode raises 22023 too');
SELECT throws_ok($$SELECT ctxgraph.graded_outcome('stig', true, 1, 'clean_failure')$$,
                 '22023', 'ctxgraph: a passed attempt has no failure mode, got ''clean_failure''',
                 'stig: a pass with a failure mode raises 22023');
SELECT throws_ok($$SELECT ctxgraph.graded_outcome('cve', true, 1, 'health_failure')$$,
                 '22023', 'ctxgraph: a passed attempt has no failure mode, got ''health_failure''',
                 'cve: a pass with a failure mode raises 22023');
SELECT throws_ok($$SELECT ctxgraph.graded_outcome('stig', false, 2)$$,
                 '22023', 'ctxgraph: a failed attempt of graded skill ''stig'' needs a failure mode',
                 'stig: a graded failure without a mode raises 22023');
SELECT throws_ok($$SELECT ctxgraph.param('outcome.no_such_thing')$$,
                 '22023', 'ctxgraph: no parameter named ''outcome.no_such_thing''',
                 'ctxgraph.param on a missing name raises 22023');
SELECT throws_ok($$SELECT ctxgraph.param(NULL)$$,
                 '22023', 'ctxgraph: no parameter named NULL',
                 'ctxgraph.param(NULL) raises 22023');

-- A parameter removed from under the function is an error, not a NULL outcome.
DELETE FROM ctxgraph.parameters WHERE name = 'outcome.pass.late';
SELECT throws_ok($$SELECT ctxgraph.graded_outcome('stig', true, 9)$$,
                 '22023', 'ctxgraph: no parameter named ''outcome.pass.late''',
                 'stig: a late pass with outcome.pass.late missing raises 22023');

SELECT * FROM finish();
ROLLBACK;
