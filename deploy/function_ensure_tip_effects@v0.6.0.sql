-- Deploy ctxgraph:function_ensure_tip_effects to pg
-- requires: table_tip_effects
-- requires: table_tip_stats
-- requires: table_group_roles

-- evict_tips refits the effects before it decides, so that even a dry run decides on exactly the
-- evidence up to its as_of; the fit reads every (tip, attempt) of the skill and iterates, which at
-- millions of rows costs far more than the decision. ensure_tip_effects refits only when the last
-- fit may differ from a fresh one: it records, per skill, a fingerprint of every tip's
-- tip_stats.evidence_version (every change of a tip's log rows increments it), the effects.* and blame.* parameters and the
-- instant of the fit it made. The fit is current when the sum and the parameters are unchanged,
-- tip_effects still holds that fit, and no retrieval lies after either instant (then the evidence
-- up to one instant is the evidence up to the other). The fingerprint is read before the fit reads
-- its rows, so a write that commits in between only makes the record look older: it can cause an
-- extra refit, never a stale answer.
BEGIN;

CREATE TABLE ctxgraph.tip_effect_fits (
    skill            text PRIMARY KEY REFERENCES ctxgraph.skills (name) ON DELETE CASCADE,
    evidence_version numeric NOT NULL,
    as_of            timestamptz NOT NULL,
    parameters       jsonb NOT NULL,
    fitted_at        timestamptz NOT NULL
);

COMMENT ON TABLE ctxgraph.tip_effect_fits IS
    'The last fit ensure_tip_effects made per skill: the evidence version and parameters it saw, so the next call can tell whether a refit would change anything.';
COMMENT ON COLUMN ctxgraph.tip_effect_fits.skill IS 'The skill.';
COMMENT ON COLUMN ctxgraph.tip_effect_fits.evidence_version IS 'Fingerprint of the skill''s tip_stats.evidence_version values (a sum of per-tip hashes), read before the fit read its rows.';
COMMENT ON COLUMN ctxgraph.tip_effect_fits.as_of IS 'The instant the fit used.';
COMMENT ON COLUMN ctxgraph.tip_effect_fits.parameters IS 'The effects.* and blame.* parameters in force.';
COMMENT ON COLUMN ctxgraph.tip_effect_fits.fitted_at IS 'When the fit ran.';

DO $$ BEGIN PERFORM ctxgraph._grant('SELECT ON ctxgraph.tip_effect_fits', '{analyst}'); END $$;

-- _tip_effects_fingerprint: what a fit depends on besides its instant.
CREATE FUNCTION ctxgraph._tip_effects_fingerprint(skill text, OUT evidence_version numeric, OUT parameters jsonb,
                                                  OUT latest_retrieval timestamptz)
LANGUAGE sql STABLE
AS $$
    -- A sum of per-tip hashes rather than of the versions: a deleted tip's term leaves with it, so
    -- a deletion and a few writes elsewhere cannot add up to the old value.
    SELECT (SELECT coalesce(sum(pg_catalog.hashtextextended(s.tip_id || ':' || s.evidence_version, 0)::numeric), 0)
              FROM ctxgraph.tip_stats AS s
             WHERE s.skill = _tip_effects_fingerprint.skill),
           -- Every parameter the fit reads: the effects' and the blame model's.
           (SELECT coalesce(jsonb_object_agg(p.name, p.value ORDER BY p.name), '{}')
              FROM ctxgraph.parameters AS p
             WHERE p.name LIKE 'effects.%' OR p.name LIKE 'blame.%'),
           (SELECT max(s.last_retrieved_at) FROM ctxgraph.tip_stats AS s WHERE s.skill = _tip_effects_fingerprint.skill)
$$;

COMMENT ON FUNCTION ctxgraph._tip_effects_fingerprint(text) IS
    'Private: the skill''s evidence version, the effects.* and blame.* parameters and its latest retrieval, which decide whether a fit is current.';

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

REVOKE ALL ON FUNCTION ctxgraph._tip_effects_fingerprint(text), ctxgraph.ensure_tip_effects(text, timestamptz) FROM PUBLIC;
DO $$ BEGIN PERFORM ctxgraph._grant('EXECUTE ON FUNCTION ctxgraph.ensure_tip_effects(text, timestamptz)', '{scorer,writer}'); END $$;

COMMIT;
