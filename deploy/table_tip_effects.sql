-- Deploy ctxgraph:table_tip_effects to pg
-- requires: table_tip_effects@v0.6.0
-- requires: function_evict_tips

-- Rework: the fit leaves PL/pgSQL. refresh_tip_effects and its helpers (the Cholesky steps, IRLS
-- and the blockwise sweeps, the blame's EM over subsets and its mean field, Aitken's steps)
-- interpreted every arithmetic step: 97 s for the bench's 1M-row log, half an hour at 10M. The
-- same model runs in the ctxgraph package (ctxgraph.fit: numpy and scipy.sparse), reads the
-- evidence through fit_snapshot and fit_evidence and writes this table through write_tip_fit; the
-- views, tip_evidence and evict_tips read the table as before. The revert restores the PL/pgSQL fit.
--
-- effects.max_sweeps is read no more: the numpy fit solves each Newton step for every group at once
-- (conjugate gradients), with no sweeps over rule blocks to bound. Its row stays, as an upgrade
-- never changes or deletes a row an operator may have set.
BEGIN;

DROP FUNCTION ctxgraph.refresh_tip_effects(text, timestamptz);
DROP FUNCTION ctxgraph._fit_tip_blame(text, timestamptz);
DROP FUNCTION ctxgraph._blame_mean_field(double precision, double precision, double precision, integer);
DROP FUNCTION ctxgraph._aitken_mixture(double precision[], double precision[], double precision[], double precision);
DROP FUNCTION ctxgraph._aitken_share(double precision, double precision, double precision);
DROP FUNCTION ctxgraph._aitken_step(double precision, double precision);
DROP FUNCTION ctxgraph._follow_chance(boolean, double precision, double precision, double precision, double precision,
                                      double precision, double precision);
DROP FUNCTION ctxgraph._ridge_step(double precision[], double precision[], integer);
DROP FUNCTION ctxgraph._ridge_solve(double precision[], double precision[], integer);

COMMENT ON TABLE ctxgraph.tip_effects IS
    'Per-tip effect on the attempt''s graded outcome when followed, adjusted for co-followed tips and the rule''s difficulty (penalised logistic regression with rule intercepts), with bounds, support and the blame model''s misleading_probability; written by the attribution fit (ctxgraph fit, the end of a scoring pass) through write_tip_fit.';
COMMENT ON COLUMN ctxgraph.tip_effects.method IS
    'exact (std error from its whole group''s information), blockwise (a group larger than effects.max_component_tips: std error from its rule block''s, the other blocks held fixed; the effect is the same optimum), not_fitted (kept for fits written before blockwise existed), no_evidence.';
COMMENT ON COLUMN ctxgraph.tip_effects.parameters IS
    'The effects.* parameters the fit used and its Newton iterations, and the blame model''s parameters and summary (method, sweeps, whether it settled, the fitted shares).';

COMMIT;
