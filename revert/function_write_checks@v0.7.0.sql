-- Revert ctxgraph:function_write_checks from pg

BEGIN;

DROP FUNCTION ctxgraph._raise_problem(text, text, text, bigint);
DROP FUNCTION ctxgraph._outcome_problem(text, text, boolean, integer, text);
DROP FUNCTION ctxgraph._attempt_problem(text, text, integer, timestamptz, timestamptz);
DROP FUNCTION ctxgraph._missing_tips(text, bigint[]);
DROP FUNCTION ctxgraph._retrieval_batch_problem(text, text, bigint[], double precision[], timestamptz);
DROP FUNCTION ctxgraph._id_problem(text, text);
-- IF EXISTS: a database deployed from main before the id rule named these has none of them, and
-- is brought to the release by reverting to @v0.5.0 and deploying again (README).
DROP FUNCTION IF EXISTS ctxgraph._code_point_at(text, text);
DROP FUNCTION IF EXISTS ctxgraph._id_lookalike_letters();
DROP FUNCTION IF EXISTS ctxgraph._id_forbidden_characters();

COMMIT;
