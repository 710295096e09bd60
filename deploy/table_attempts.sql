-- Deploy ctxgraph:table_attempts to pg
-- requires: table_runs
-- requires: table_failure_modes

BEGIN;

-- One sequence for all skills: identity columns on partitioned tables need PostgreSQL 17.
CREATE SEQUENCE ctxgraph.attempts_id_seq AS bigint;

CREATE TABLE ctxgraph.attempts (
    skill          text NOT NULL REFERENCES ctxgraph.skills (name),
    id             bigint NOT NULL DEFAULT nextval('ctxgraph.attempts_id_seq'),
    run_id         text NOT NULL,
    rule_id        text NOT NULL CHECK (btrim(rule_id) <> ''),
    attempt_number integer NOT NULL CHECK (attempt_number >= 1),
    passed         boolean,
    failure_mode   text REFERENCES ctxgraph.failure_modes (name),
    approach       text,
    started_at     timestamptz,
    ended_at       timestamptz,
    PRIMARY KEY (skill, id),
    CONSTRAINT attempts_run_rule_attempt_key UNIQUE (skill, run_id, rule_id, attempt_number),
    FOREIGN KEY (skill, run_id) REFERENCES ctxgraph.runs (skill, id),
    CONSTRAINT attempts_passed_has_no_failure_mode CHECK (passed IS NOT TRUE OR failure_mode IS NULL),
    CONSTRAINT attempts_ends_after_start CHECK (ended_at >= started_at)
) PARTITION BY LIST (skill);

ALTER SEQUENCE ctxgraph.attempts_id_seq OWNED BY ctxgraph.attempts.id;

COMMENT ON TABLE ctxgraph.attempts IS 'One row per attempt at a rule in a run, all skills; rows live in <skill>.attempts.';
COMMENT ON COLUMN ctxgraph.attempts.skill IS 'The skill (partition key).';
COMMENT ON COLUMN ctxgraph.attempts.id IS 'Attempt id, returned by ctxgraph.save_attempt and referenced by tip_retrievals.attempt_id.';
COMMENT ON COLUMN ctxgraph.attempts.run_id IS 'The run this attempt belongs to.';
COMMENT ON COLUMN ctxgraph.attempts.rule_id IS 'The rule the Worker tried to fix.';
COMMENT ON COLUMN ctxgraph.attempts.attempt_number IS '1 for the first attempt at the rule in this run; graded outcomes depend on it.';
COMMENT ON COLUMN ctxgraph.attempts.passed IS 'Evaluator verdict; NULL until ctxgraph.record_outcome.';
COMMENT ON COLUMN ctxgraph.attempts.failure_mode IS 'For failed attempts: a ctxgraph.failure_modes name.';
COMMENT ON COLUMN ctxgraph.attempts.approach IS 'The Worker''s narrative of the attempt; the real fix script lives in the run log.';
COMMENT ON COLUMN ctxgraph.attempts.started_at IS 'When the attempt started, if known.';
COMMENT ON COLUMN ctxgraph.attempts.ended_at IS 'When the attempt ended, if known.';

GRANT SELECT, INSERT ON ctxgraph.attempts TO ctxgraph_writer;
GRANT UPDATE (passed, failure_mode, approach, started_at, ended_at) ON ctxgraph.attempts TO ctxgraph_writer;
GRANT USAGE ON SEQUENCE ctxgraph.attempts_id_seq TO ctxgraph_writer;
GRANT SELECT ON ctxgraph.attempts TO ctxgraph_scorer, ctxgraph_analyst;

COMMIT;
