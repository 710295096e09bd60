-- Revert ctxgraph:function_ensure_tip_effects from pg
-- The state before the rework: ensure_tip_effects back (it refits through refresh_tip_effects,
-- which the revert of table_tip_effects' rework restores first), fit_state gone.

BEGIN;

DROP FUNCTION ctxgraph.fit_state(text, timestamptz);
DROP FUNCTION ctxgraph.fit_previous(text, timestamptz);
DROP FUNCTION ctxgraph._fit_changed_tips(text, timestamptz);

CREATE FUNCTION ctxgraph.ensure_tip_effects(skill text, as_of timestamptz DEFAULT now())
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    current ctxgraph.tip_effect_fits;
    now_fp  record;
    fitted  integer;
BEGIN
    PERFORM ctxgraph._require_skill(ensure_tip_effects.skill);
    IF ensure_tip_effects.as_of IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: ensure_tip_effects needs as_of' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT pg_catalog.isfinite(ensure_tip_effects.as_of) THEN
        -- infinity is no instant: nothing may be retired, restored or fitted "as of" it.
        RAISE EXCEPTION 'ctxgraph: ensure_tip_effects needs a finite as_of, got %', ensure_tip_effects.as_of
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The same lock refresh_tip_effects takes: the check and the fit it may skip see one state.
    PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('ctxgraph.refresh_tip_effects'),
                                             pg_catalog.hashtext(ensure_tip_effects.skill));
    now_fp := ctxgraph._tip_effects_fingerprint(ensure_tip_effects.skill);
    SELECT f.* INTO current FROM ctxgraph.tip_effect_fits AS f WHERE f.skill = ensure_tip_effects.skill;
    IF current.evidence_version = now_fp.evidence_version
       AND current.parameters = now_fp.parameters
       AND (now_fp.latest_retrieval IS NULL
            OR (current.as_of >= now_fp.latest_retrieval AND ensure_tip_effects.as_of >= now_fp.latest_retrieval)
            OR current.as_of = ensure_tip_effects.as_of)
       -- tip_effects still holds that fit (refresh_tip_effects called by hand replaces it).
       AND NOT EXISTS (SELECT 1 FROM ctxgraph.tip_effects AS e
                        WHERE e.skill = ensure_tip_effects.skill AND e.as_of <> current.as_of)
    THEN
        RETURN (SELECT count(*) FROM ctxgraph.tip_effects AS e
                 WHERE e.skill = ensure_tip_effects.skill AND e.method <> 'no_evidence');
    END IF;
    fitted := ctxgraph.refresh_tip_effects(ensure_tip_effects.skill, ensure_tip_effects.as_of);
    INSERT INTO ctxgraph.tip_effect_fits (skill, evidence_version, as_of, parameters, fitted_at)
    VALUES (ensure_tip_effects.skill, now_fp.evidence_version, ensure_tip_effects.as_of, now_fp.parameters, now())
    ON CONFLICT (skill) DO UPDATE
       SET (evidence_version, as_of, parameters, fitted_at)
         = (excluded.evidence_version, excluded.as_of, excluded.parameters, excluded.fitted_at);
    RETURN fitted;
END
$$;

COMMENT ON FUNCTION ctxgraph.ensure_tip_effects(text, timestamptz) IS
    'Makes ctxgraph.tip_effects the fit of the skill''s evidence up to as_of: refits (refresh_tip_effects) unless the last fit it made is already that fit; returns the tips with evidence.';

REVOKE ALL ON FUNCTION ctxgraph.ensure_tip_effects(text, timestamptz) FROM PUBLIC;
DO $$ BEGIN PERFORM ctxgraph._grant('EXECUTE ON FUNCTION ctxgraph.ensure_tip_effects(text, timestamptz)', '{scorer,writer}'); END $$;

COMMIT;
