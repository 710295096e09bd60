-- Revert ctxgraph:view_run_overview from pg

BEGIN;

DO $$
BEGIN
    PERFORM ctxgraph.unexpose_skill_view('scoring_null_reasons');
    PERFORM ctxgraph.unexpose_skill_view('run_overview');
END
$$;
DROP VIEW ctxgraph.scoring_null_reasons;
DROP VIEW ctxgraph.run_overview;

COMMIT;
