-- Revert ctxgraph:function_evict_tips from pg
-- The state before the rework: evict_tips refits through ensure_tip_effects (restored by the revert
-- of function_ensure_tip_effects' rework, next) and knows no eviction.max_unfitted_tips.

BEGIN;

DELETE FROM ctxgraph.parameters WHERE name = 'eviction.max_unfitted_tips';

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

COMMENT ON FUNCTION ctxgraph.evict_tips(text, timestamptz, boolean) IS
    'Retires (never deletes) the tips whose ctxgraph.tip_evidence as of as_of gives a reason, logging each in ctxgraph.tip_evictions; with dry_run (the default) only returns what it would retire.';

COMMIT;
