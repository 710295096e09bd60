-- Deploy ctxgraph:table_failure_modes to pg
-- requires: table_parameters

-- The failure modes an evaluator may report, each mapped to the parameter that holds its graded
-- value (ADR-0019 DEF-26). A new mode is a row here plus a parameter, not a code change; an
-- unknown mode is an error, never a silent 0.
BEGIN;

INSERT INTO ctxgraph.parameters (name, value, description) VALUES
    ('outcome.pass.first_attempt',       1.0, 'DEF-26: graded value of a pass on attempt 1.'),
    ('outcome.pass.early',               0.8, 'DEF-26: graded value of a pass on attempts 2 to outcome.pass.early_last_attempt.'),
    ('outcome.pass.early_last_attempt',  3,   'DEF-26: the last attempt number that still counts as an early pass.'),
    ('outcome.pass.late',                0.5, 'DEF-26: graded value of a pass after the early attempts (4+).'),
    ('outcome.fail.evaluator_gap',       0.0, 'DEF-26: failed because the evaluator could not check the rule.'),
    ('outcome.fail.clean_failure',       0.0, 'DEF-26: failed cleanly: the rule is still not satisfied.'),
    ('outcome.fail.health_failure',     -0.2, 'DEF-26: failed by breaking the system; retrieved tips lose utility.'),
    ('outcome.binary.pass',              1.0, 'Binary skills: value of a pass on any attempt.'),
    ('outcome.binary.fail',              0.0, 'Binary skills: value of a failure of any mode.'),
    ('outcome.confidence',               1.0, 'outcome_confidence written with every outcome: the evaluator is deterministic.');

CREATE TABLE ctxgraph.failure_modes (
    name              text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]*$'),
    outcome_parameter text NOT NULL REFERENCES ctxgraph.parameters (name),
    is_harm           boolean NOT NULL DEFAULT false,
    description       text NOT NULL
);

COMMENT ON TABLE ctxgraph.failure_modes IS
    'Failure modes an evaluator may report; graded skills score a failure by its mode''s parameter.';
COMMENT ON COLUMN ctxgraph.failure_modes.name IS 'The failure_mode value an attempt carries.';
COMMENT ON COLUMN ctxgraph.failure_modes.outcome_parameter IS 'ctxgraph.parameters row holding the graded value of this failure.';
COMMENT ON COLUMN ctxgraph.failure_modes.is_harm IS 'True when the failure broke the system: a followed tip then counts as harm.';
COMMENT ON COLUMN ctxgraph.failure_modes.description IS 'What the evaluator means by it.';

INSERT INTO ctxgraph.failure_modes (name, outcome_parameter, is_harm, description) VALUES
    ('evaluator_gap',  'outcome.fail.evaluator_gap',  false, 'The evaluator could not check the rule.'),
    ('clean_failure',  'outcome.fail.clean_failure',  false, 'The fix ran but the rule is still not satisfied.'),
    ('health_failure', 'outcome.fail.health_failure', true,  'The fix broke the system (a service down, a lockout).');

GRANT SELECT ON ctxgraph.failure_modes TO ctxgraph_writer, ctxgraph_scorer, ctxgraph_ranker, ctxgraph_analyst;

COMMIT;
