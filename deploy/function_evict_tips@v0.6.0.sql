-- Deploy ctxgraph:function_evict_tips to pg
-- requires: function_evict_tips@v0.5.0
-- requires: function_ensure_tip_effects

-- Rework: evict_tips still decides on effects fitted to exactly the evidence up to its as_of, but
-- through ensure_tip_effects, which refits only when the last fit is not already that fit (the
-- evidence, the parameters or the instant changed). A dry run right after a scoring pass then costs
-- the reading of the maintained evidence, not a refit over every attempt. Same arguments, same
-- result. restore_tip checks its arguments before it looks the tip up: a NULL tip id or as_of is
-- 22004 (released, a NULL tip id said "no tip with id NULL", P0002, and a NULL as_of passed when
-- the tip was not retired).
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph.evict_tips(skill text, as_of timestamptz DEFAULT now(), dry_run boolean DEFAULT true)
RETURNS TABLE (tip_id bigint, reason text, followed_attempts double precision, followed_outcome double precision,
               rule_baseline double precision, harm_attempts double precision, retired boolean)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
#variable_conflict use_column
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
    -- Decide on effects fitted to exactly the evidence up to as_of (a dry run too: the preview
    -- must be what a real run would do); refit only if the last fit is not that one.
    PERFORM ctxgraph.ensure_tip_effects(evict_tips.skill, evict_tips.as_of);

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

CREATE OR REPLACE FUNCTION ctxgraph.restore_tip(skill text, tip_id bigint, as_of timestamptz DEFAULT now())
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    was_retired timestamptz;
BEGIN
    PERFORM ctxgraph._require_skill(restore_tip.skill);
    IF restore_tip.tip_id IS NULL OR restore_tip.as_of IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: restore_tip needs tip_id and as_of' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT pg_catalog.isfinite(restore_tip.as_of) THEN
        -- infinity is no instant: nothing may be retired, restored or fitted "as of" it.
        RAISE EXCEPTION 'ctxgraph: restore_tip needs a finite as_of, got %', restore_tip.as_of
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT t.retired_at INTO was_retired FROM ctxgraph.tips AS t
     WHERE t.skill = restore_tip.skill AND t.id = restore_tip.tip_id
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ctxgraph: no % tip with id %', restore_tip.skill, restore_tip.tip_id
            USING ERRCODE = 'no_data_found';
    END IF;
    IF was_retired IS NULL THEN
        RETURN false;
    END IF;
    UPDATE ctxgraph.tips AS t SET retired_at = NULL
     WHERE t.skill = restore_tip.skill AND t.id = restore_tip.tip_id;
    UPDATE ctxgraph.tip_evictions AS e SET restored_at = greatest(restore_tip.as_of, e.retired_at)
     WHERE e.skill = restore_tip.skill AND e.tip_id = restore_tip.tip_id AND e.restored_at IS NULL;
    RETURN true;
END
$$;

COMMIT;
