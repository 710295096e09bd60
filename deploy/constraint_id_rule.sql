-- Deploy ctxgraph:constraint_id_rule to pg
-- requires: function_write_checks
-- requires: table_runs
-- requires: table_attempts
-- requires: table_tips
-- requires: table_tip_retrievals

-- The id rule (ctxgraph._id_problem: at most 200 characters, no whitespace, control or invisible
-- character, NFKC form, no Latin letters beside Greek or Cyrillic ones) held only in the
-- write-path functions: a writer's plain INSERT stored a run id with U+202E or of 5,000 characters.
-- Now the tables hold it for every run and rule id a writer can name, by a check on each column
-- that calls the same function, so the rule has one definition. Declared on the parents, so every
-- skill's partition, and a skill added later, holds them; existing rows are checked as they are
-- added (an upgrade over such an id stops here, naming the constraint, and keeps every row).
-- A plain statement that breaks it gets 23514; the functions refuse first, with 22023 and the
-- character named.
BEGIN;

ALTER TABLE ctxgraph.runs
    ADD CONSTRAINT runs_id_rule CHECK (id <> '' AND ctxgraph._id_problem('id', id) IS NULL);
ALTER TABLE ctxgraph.attempts
    ADD CONSTRAINT attempts_id_rule CHECK (run_id <> '' AND rule_id <> ''
                                           AND ctxgraph._id_problem('run_id', run_id) IS NULL
                                           AND ctxgraph._id_problem('rule_id', rule_id) IS NULL);
ALTER TABLE ctxgraph.tips
    ADD CONSTRAINT tips_id_rule CHECK (rule_id <> '' AND ctxgraph._id_problem('rule_id', rule_id) IS NULL);
ALTER TABLE ctxgraph.tip_retrievals
    ADD CONSTRAINT retrievals_id_rule CHECK (run_id <> '' AND rule_id <> ''
                                             AND ctxgraph._id_problem('run_id', run_id) IS NULL
                                             AND ctxgraph._id_problem('rule_id', rule_id) IS NULL);

-- A check runs with the rights of whoever writes the row, on every UPDATE of it too: the scorer,
-- which updates the log's DEF-27 columns and the tips' embeddings, needs the rule as the writer does.
DO $$ BEGIN PERFORM ctxgraph._grant('EXECUTE ON FUNCTION ctxgraph._id_problem(text, text), ctxgraph._id_forbidden_characters(), '
                                    'ctxgraph._id_lookalike_letters(), ctxgraph._code_point_at(text, text)', '{scorer}'); END $$;

COMMENT ON CONSTRAINT runs_id_rule ON ctxgraph.runs IS
    'A run id keeps the id rule (ctxgraph._id_problem): 1 to 200 characters, none of them whitespace, control or invisible, NFKC form, no Latin beside Greek or Cyrillic letters.';
COMMENT ON CONSTRAINT attempts_id_rule ON ctxgraph.attempts IS
    'The attempt''s run and rule ids keep the id rule (ctxgraph._id_problem).';
COMMENT ON CONSTRAINT tips_id_rule ON ctxgraph.tips IS
    'The tip''s rule id, when it has one, keeps the id rule (ctxgraph._id_problem).';
COMMENT ON CONSTRAINT retrievals_id_rule ON ctxgraph.tip_retrievals IS
    'The retrieval''s run and rule ids keep the id rule (ctxgraph._id_problem).';

COMMIT;
