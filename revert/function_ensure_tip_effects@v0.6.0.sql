-- Revert ctxgraph:function_ensure_tip_effects from pg

BEGIN;

DROP FUNCTION ctxgraph.ensure_tip_effects(text, timestamptz);
DROP FUNCTION ctxgraph._tip_effects_fingerprint(text);
DROP TABLE ctxgraph.tip_effect_fits;

COMMIT;
