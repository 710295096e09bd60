-- Revert ctxgraph:constraint_id_rule from pg

BEGIN;

REVOKE EXECUTE ON FUNCTION ctxgraph._id_problem(text, text), ctxgraph._id_forbidden_characters(), ctxgraph._id_lookalike_letters(),
    ctxgraph._code_point_at(text, text) FROM ctxgraph_scorer;
ALTER TABLE ctxgraph.tip_retrievals DROP CONSTRAINT retrievals_id_rule;
ALTER TABLE ctxgraph.tips DROP CONSTRAINT tips_id_rule;
ALTER TABLE ctxgraph.attempts DROP CONSTRAINT attempts_id_rule;
ALTER TABLE ctxgraph.runs DROP CONSTRAINT runs_id_rule;

COMMIT;
