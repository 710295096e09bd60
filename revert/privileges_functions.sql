-- Revert ctxgraph:privileges_functions from pg

-- PUBLIC's default EXECUTE back on exactly the functions that had it when this change deployed.
BEGIN;

GRANT EXECUTE ON FUNCTION
    ctxgraph._require_skill(text),
    ctxgraph.cohen_kappa(bigint, bigint, bigint, bigint),
    ctxgraph.follow_label_metrics(text, bigint[], boolean[]),
    ctxgraph.follow_weight(boolean, double precision),
    ctxgraph.graded_outcome(text, boolean, integer, text),
    ctxgraph.param(text),
    ctxgraph.rule_ranking(text, text),
    ctxgraph.tip_evidence(text, timestamptz),
    ctxgraph.tip_followed(boolean, double precision),
    ctxgraph.wilson_lower(double precision, double precision, double precision),
    ctxgraph.wilson_upper(double precision, double precision, double precision)
TO PUBLIC;

COMMIT;
