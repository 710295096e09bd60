-- Deploy ctxgraph:function_evict_tips to pg
-- requires: function_evict_tips@v0.6.0
-- requires: function_ensure_tip_effects

-- Rework: evict_tips no longer refits (the fit runs in ctxgraph.fit, which SQL cannot call): it
-- decides on the stored fit, as tip_evidence and the views read it, and says when that fit is not
-- the fit of the evidence up to its as_of (fit_state). A dry run answers anyway, with a WARNING
-- that says how stale the fit is and which command refits; a retiring run refuses, with 55000 and
-- nothing retired, a fit that never was, one fitted with other effects.* or blame.* parameters,
-- one that read evidence after its as_of, or one that has not seen more than
-- eviction.max_unfitted_tips tips' evidence (0: every change). `ctxgraph evict --apply` fits first.
BEGIN;

INSERT INTO ctxgraph.parameters (name, value, description) VALUES
    ('eviction.max_unfitted_tips', 0, 'Eviction: most tips whose evidence changed since the stored fit that a retiring evict_tips accepts (more: 55000, refit first); a dry run only warns.');

CREATE OR REPLACE FUNCTION ctxgraph.evict_tips(skill text, as_of timestamptz DEFAULT now(), dry_run boolean DEFAULT true)
RETURNS TABLE (tip_id bigint, reason text, followed_attempts double precision, followed_outcome double precision,
               rule_baseline double precision, harm_attempts double precision, retired boolean)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    state     record;
    staleness text;
BEGIN
    PERFORM ctxgraph._require_skill(evict_tips.skill);
    IF evict_tips.as_of IS NULL OR evict_tips.dry_run IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: evict_tips needs as_of and dry_run' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT pg_catalog.isfinite(evict_tips.as_of) THEN
        -- infinity is no instant: nothing may be retired, restored or fitted "as of" it.
        RAISE EXCEPTION 'ctxgraph: evict_tips needs a finite as_of, got %', evict_tips.as_of
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Decide on the stored fit. A dry run on a stale one still answers, with a warning that says
    -- how stale and what refits; a run that retires refuses one past eviction.max_unfitted_tips,
    -- fitted with other parameters, or one that read evidence after as_of (55000, nothing retired).
    -- The lock write_tip_fit takes: no fit is written between the check below and the retirements.
    PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('ctxgraph.refresh_tip_effects'),
                                             pg_catalog.hashtext(evict_tips.skill));
    state := ctxgraph.fit_state(evict_tips.skill, evict_tips.as_of);
    IF NOT state.current THEN
        staleness := CASE
            WHEN state.fitted_at IS NULL THEN format('%s has never been fitted', evict_tips.skill)
            ELSE format('the fit of %s as of %s is stale: %s tips'' evidence changed since and %s scored attempts came after it%s',
                        evict_tips.skill, state.fit_as_of, state.tips_changed, state.attempts_after,
                        CASE WHEN state.parameters_changed THEN ', and the effects.* or blame.* parameters changed' ELSE '' END)
        END;
        IF evict_tips.dry_run THEN
            RAISE WARNING 'ctxgraph: %', staleness USING HINT = format('The preview reads that fit; to refit: %s', state.refit);
        ELSIF state.fitted_at IS NULL OR state.parameters_changed OR state.fit_as_of > evict_tips.as_of
              OR state.tips_changed > ctxgraph.param('eviction.max_unfitted_tips') THEN
            RAISE EXCEPTION 'ctxgraph: evict_tips retires nothing on this fit: %', staleness
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = format('Refit (%s), then evict again; eviction.max_unfitted_tips (%s) is how many tips'' unfitted evidence a retiring run accepts.',
                                    state.refit, ctxgraph.param('eviction.max_unfitted_tips'));
        END IF;
    END IF;

    -- One statement: the evidence is computed once, and the retirements and their log rows
    -- are written (unless dry_run) from that same set.
    RETURN QUERY
    WITH batch AS MATERIALIZED (
        SELECT e.tip_id, e.reason, e.followed_attempts, e.followed_outcome, e.rule_baseline,
               e.harm_attempts, to_jsonb(e) AS evidence
          FROM ctxgraph.tip_evidence(evict_tips.skill, evict_tips.as_of) AS e
         WHERE e.reason IS NOT NULL AND NOT e.retired
    ),
    retire AS (
        UPDATE ctxgraph.tips AS t
           SET retired_at = evict_tips.as_of
          FROM batch AS b
         WHERE NOT evict_tips.dry_run
           AND t.skill = evict_tips.skill AND t.id = b.tip_id AND t.retired_at IS NULL
        RETURNING t.id
    ),
    log_rows AS (
        INSERT INTO ctxgraph.tip_evictions (skill, tip_id, retired_at, reason, evidence)
        SELECT evict_tips.skill, b.tip_id, evict_tips.as_of, b.reason, b.evidence
          FROM batch AS b
          JOIN retire AS r ON r.id = b.tip_id
        RETURNING tip_evictions.tip_id
    )
    SELECT b.tip_id, b.reason, b.followed_attempts, b.followed_outcome, b.rule_baseline, b.harm_attempts,
           EXISTS (SELECT 1 FROM log_rows AS l WHERE l.tip_id = b.tip_id)
      FROM batch AS b
     ORDER BY b.tip_id;
END
$$;

COMMENT ON FUNCTION ctxgraph.evict_tips(text, timestamptz, boolean) IS
    'Retires (unless dry_run) the skill''s tips that tip_evidence gives a reason, on the stored fit (ctxgraph fit); a stale fit: a warning on a dry run, 55000 on a retiring one past eviction.max_unfitted_tips.';

COMMIT;
