-- Deploy ctxgraph:function_ensure_tip_effects to pg
-- requires: function_ensure_tip_effects@v0.6.0
-- requires: function_fit_io

-- Rework: the fit runs in the ctxgraph package (ctxgraph.fit; `ctxgraph fit`, the end of a scoring
-- pass, `ctxgraph evict`), which SQL cannot call, so ensure_tip_effects (refit unless current)
-- goes. What stays in SQL is the question it answered: is the stored fit the fit of a skill's
-- evidence up to an instant, and if not, how far from it? fit_state answers it for evict_tips,
-- the CLI and an operator, from the record ctxgraph.tip_effect_fits keeps (the fingerprint of
-- every tip's tip_stats.evidence_version, the parameters, the instant) and the per-tip evidence
-- versions the fit wrote beside its rows.
BEGIN;

DROP FUNCTION ctxgraph.ensure_tip_effects(text, timestamptz);

COMMENT ON TABLE ctxgraph.tip_effect_fits IS
    'The last fit written per skill (write_tip_fit): the evidence fingerprint and parameters it read and its instant, so fit_state can tell whether it is still the fit of the skill''s evidence.';
COMMENT ON COLUMN ctxgraph.tip_effect_fits.evidence_version IS
    'Fingerprint of the skill''s tip_stats.evidence_version values (a sum of per-tip hashes), read in the snapshot the fit read its rows in.';

CREATE FUNCTION ctxgraph.fit_state(skill text, as_of timestamptz DEFAULT now())
RETURNS TABLE (fitted_at timestamptz, fit_as_of timestamptz, current boolean, parameters_changed boolean,
               tips_changed bigint, attempts_after bigint, refit text)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    fit       ctxgraph.tip_effect_fits;
    now_fp    record;
    same_evidence boolean;
BEGIN
    PERFORM ctxgraph._require_skill(fit_state.skill);
    IF fit_state.as_of IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: fit_state needs as_of' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT pg_catalog.isfinite(fit_state.as_of) THEN
        RAISE EXCEPTION 'ctxgraph: fit_state needs a finite as_of, got %', fit_state.as_of
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    now_fp := ctxgraph._tip_effects_fingerprint(fit_state.skill);
    SELECT f.* INTO fit FROM ctxgraph.tip_effect_fits AS f WHERE f.skill = fit_state.skill;
    fitted_at := fit.fitted_at;
    fit_as_of := fit.as_of;
    parameters_changed := fit.parameters IS DISTINCT FROM now_fp.parameters;
    same_evidence := fit.evidence_version = now_fp.evidence_version;
    -- Current: the same evidence and parameters, tip_effects still holds that fit, and no retrieval
    -- lies between the fit's instant and the one asked about (then the evidence up to one is the
    -- evidence up to the other).
    current := coalesce(same_evidence AND NOT parameters_changed
                        AND (now_fp.latest_retrieval IS NULL
                             OR (fit.as_of >= now_fp.latest_retrieval AND fit_state.as_of >= now_fp.latest_retrieval)
                             OR fit.as_of = fit_state.as_of)
                        AND NOT EXISTS (SELECT 1 FROM ctxgraph.tip_effects AS e
                                         WHERE e.skill = fit_state.skill AND e.as_of <> fit.as_of), false);
    IF current THEN
        tips_changed := 0;
        attempts_after := 0;
    ELSE
        -- Tips whose log rows changed since the fit read them (a new, corrected, rescored or deleted
        -- row each increments the tip's version), new tips with evidence among them.
        -- And tips retrieved after the fit's instant, up to the one asked about: a fit as of an
        -- earlier instant has the same fingerprint but has not seen them.
        tips_changed := (SELECT count(*) FROM (
            SELECT s.tip_id
              FROM (SELECT s.tip_id, s.evidence_version FROM ctxgraph.tip_stats AS s
                     WHERE s.skill = fit_state.skill) AS s
              FULL JOIN (SELECT e.tip_id, e.evidence_version FROM ctxgraph.tip_effects AS e
                          WHERE e.skill = fit_state.skill) AS e USING (tip_id)
             WHERE NOT coalesce(same_evidence, false)
               AND coalesce(s.evidence_version, 0) IS DISTINCT FROM e.evidence_version
            UNION
            SELECT a.tip_id FROM ctxgraph.tip_attempt_stats AS a
             WHERE a.skill = fit_state.skill AND a.retrieved_max <= fit_state.as_of
               AND (fit.as_of IS NULL OR a.retrieved_max > fit.as_of)) AS changed);
        -- Scored attempts the fit has not seen: retrieved after its instant, up to the one asked about.
        attempts_after := (SELECT count(DISTINCT a.attempt_key) FROM ctxgraph.tip_attempt_stats AS a
                            WHERE a.skill = fit_state.skill AND a.retrieved_max <= fit_state.as_of
                              AND (fit.as_of IS NULL OR a.retrieved_max > fit.as_of));
    END IF;
    refit := CASE WHEN NOT current THEN
        format('ctxgraph fit --skill %s', fit_state.skill)
        || CASE WHEN fit_state.as_of <> now() THEN format(' --as-of %s', to_char(fit_state.as_of AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) ELSE '' END
    END;
    RETURN NEXT;
END
$$;

COMMENT ON FUNCTION ctxgraph.fit_state(text, timestamptz) IS
    'Whether ctxgraph.tip_effects holds the fit of the skill''s evidence up to as_of with the parameters in force (current), and if not how stale it is: when it was fitted and as of what, whether the effects.* or blame.* parameters changed, tips whose evidence changed since, scored attempts after its instant; refit is the command that makes it current.';

REVOKE ALL ON FUNCTION ctxgraph.fit_state(text, timestamptz) FROM PUBLIC;
DO $$ BEGIN PERFORM ctxgraph._grant('EXECUTE ON FUNCTION ctxgraph.fit_state(text, timestamptz)', '{writer,scorer,analyst}'); END $$;

COMMIT;
