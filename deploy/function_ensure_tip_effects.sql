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

-- The tips whose evidence the stored fit has not seen: their log rows changed since it read them (a
-- new, corrected, rescored or deleted row each increments the tip's tip_stats.evidence_version; new
-- tips with evidence among them), or they were retrieved after its instant up to as_of (a fit as of
-- an earlier instant has the same fingerprint but has not seen them). Every tip when there is no
-- stored fit. fit_state counts them; an incremental fit (fit_previous) refits from them.
CREATE FUNCTION ctxgraph._fit_changed_tips(skill text, as_of timestamptz)
RETURNS SETOF bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
    WITH fit AS (SELECT f.as_of, f.evidence_version = fp.evidence_version AS same_evidence
                   FROM ctxgraph.tip_effect_fits AS f, ctxgraph._tip_effects_fingerprint(_fit_changed_tips.skill) AS fp
                  WHERE f.skill = _fit_changed_tips.skill)
    SELECT coalesce(s.tip_id, e.tip_id)
      FROM (SELECT s.tip_id, s.evidence_version FROM ctxgraph.tip_stats AS s
             WHERE s.skill = _fit_changed_tips.skill) AS s
      FULL JOIN (SELECT e.tip_id, e.evidence_version FROM ctxgraph.tip_effects AS e
                  WHERE e.skill = _fit_changed_tips.skill) AS e USING (tip_id)
     WHERE NOT coalesce((SELECT same_evidence FROM fit), false)
       AND coalesce(s.evidence_version, 0) IS DISTINCT FROM e.evidence_version
    UNION
    SELECT a.tip_id FROM ctxgraph.tip_attempt_stats AS a
     WHERE a.skill = _fit_changed_tips.skill AND a.retrieved_max <= _fit_changed_tips.as_of
       AND (NOT EXISTS (SELECT 1 FROM fit) OR a.retrieved_max > (SELECT fit.as_of FROM fit))
$$;

COMMENT ON FUNCTION ctxgraph._fit_changed_tips(text, timestamptz) IS
    'Internal (fit_state, fit_previous): the tips whose evidence up to as_of the stored fit has not seen: their tip_stats.evidence_version differs from the one the fit wrote, or they were retrieved after the fit''s instant.';

REVOKE ALL ON FUNCTION ctxgraph._fit_changed_tips(text, timestamptz) FROM PUBLIC;

-- What an incremental fit starts from, read in the snapshot it reads the evidence in: the stored
-- fit's instant, the parameters it read and the figures it fitted, and per tip its stored effect,
-- std error, method and misleading probability (warm starts, and the rows of groups with nothing
-- new), and whether its evidence changed since (_fit_changed_tips). No row when there is no fit.
CREATE FUNCTION ctxgraph.fit_previous(skill text, as_of timestamptz)
RETURNS TABLE (fit_as_of timestamptz, parameters jsonb, fit_parameters jsonb, tip_id bigint[], effect double precision[],
               std_error double precision[], method text[], misleading_probability double precision[],
               changed_tips bigint[])
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM ctxgraph._require_skill(fit_previous.skill);
    IF fit_previous.as_of IS NULL OR NOT pg_catalog.isfinite(fit_previous.as_of) THEN
        RAISE EXCEPTION 'ctxgraph: fit_previous needs a finite as_of, got %', fit_previous.as_of
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT f.as_of, f.parameters,
           (SELECT e.parameters FROM ctxgraph.tip_effects AS e WHERE e.skill = f.skill LIMIT 1),
           coalesce(t.tip_id, '{}'), coalesce(t.effect, '{}'), coalesce(t.std_error, '{}'), coalesce(t.method, '{}'),
           coalesce(t.misleading_probability, '{}'),
           (SELECT coalesce(array_agg(c ORDER BY c), '{}') FROM ctxgraph._fit_changed_tips(f.skill, fit_previous.as_of) AS c)
      FROM ctxgraph.tip_effect_fits AS f
      LEFT JOIN LATERAL (
          SELECT array_agg(e.tip_id ORDER BY e.tip_id) AS tip_id, array_agg(e.effect ORDER BY e.tip_id) AS effect,
                 array_agg(e.std_error ORDER BY e.tip_id) AS std_error, array_agg(e.method ORDER BY e.tip_id) AS method,
                 array_agg(e.misleading_probability ORDER BY e.tip_id) AS misleading_probability
            FROM ctxgraph.tip_effects AS e WHERE e.skill = f.skill) AS t ON true
     WHERE f.skill = fit_previous.skill;
END
$$;

COMMENT ON FUNCTION ctxgraph.fit_previous(text, timestamptz) IS
    'What an incremental attribution fit of a skill starts from (call it in the REPEATABLE READ transaction that reads fit_evidence): the stored fit''s instant, configured parameters and fitted figures, its per-tip effect, std error, method and misleading probability, and the tips whose evidence up to as_of it has not seen. No row when the skill has no stored fit.';

REVOKE ALL ON FUNCTION ctxgraph.fit_previous(text, timestamptz) FROM PUBLIC;
DO $$ BEGIN PERFORM ctxgraph._grant('EXECUTE ON FUNCTION ctxgraph.fit_previous(text, timestamptz)', '{scorer}'); END $$;

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
        tips_changed := (SELECT count(*) FROM ctxgraph._fit_changed_tips(fit_state.skill, fit_state.as_of));
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
