-- Revert ctxgraph:table_tip_stats from pg

-- Back to the definitions released at @v0.3.0 (one join-shaped recompute), then drop the
-- per-tip aggregate the rework added and rebuild the stats with the restored definition.

-- Exact per-tip aggregates of the retrieval log, so the ranker's read of ~50 candidate tips
-- never aggregates the raw log. They are refreshed in the same transaction as every write that
-- changes them: statement-level triggers collect the tips a statement touched and recompute
-- exactly those tips from their rows (index on skill, tip_id). Recomputing rather than adding
-- deltas keeps the non-additive parts exact (distinct attempts, latest retrieval) and makes
-- "equal to a from-scratch aggregate" true by construction.
--
-- Concurrency: the refresh first locks the tips' stats rows (in tip order, so two writers cannot
-- deadlock), then recomputes in a new statement. Under READ COMMITTED that statement's snapshot
-- includes every transaction that held the lock before, so no committed row is ever missed.
BEGIN;

-- refresh_tip_stats: recomputes the stats of the given tips (all tips of the skill when tip_ids
-- is NULL; every skill when skill is NULL) exactly from the log. Returns the tips refreshed.
CREATE OR REPLACE FUNCTION ctxgraph.refresh_tip_stats(skill text DEFAULT NULL, tip_ids bigint[] DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    refreshed integer;
BEGIN
    -- 1. Make sure every tip has a stats row and lock those rows in a fixed order.
    INSERT INTO ctxgraph.tip_stats AS s (skill, tip_id)
    SELECT t.skill, t.id FROM ctxgraph.tips AS t
     WHERE (refresh_tip_stats.skill IS NULL OR t.skill = refresh_tip_stats.skill)
       AND (refresh_tip_stats.tip_ids IS NULL OR t.id = ANY (refresh_tip_stats.tip_ids))
     ORDER BY t.skill, t.id
    ON CONFLICT (skill, tip_id) DO NOTHING;
    PERFORM 1 FROM ctxgraph.tip_stats AS s
     WHERE (refresh_tip_stats.skill IS NULL OR s.skill = refresh_tip_stats.skill)
       AND (refresh_tip_stats.tip_ids IS NULL OR s.tip_id = ANY (refresh_tip_stats.tip_ids))
     ORDER BY s.skill, s.tip_id
       FOR UPDATE;

    -- 2. Recompute from the log in a fresh statement (fresh snapshot under READ COMMITTED).
    WITH log_rows AS (
        SELECT r.skill, r.tip_id, r.id, r.attempt_id, r.retrieved_at,
               r.outcome_value * coalesce(r.outcome_confidence, 1.0) AS credit,
               ctxgraph.follow_weight(r.tip_followed_llm, r.tip_followed_emb) AS weight,
               ctxgraph.tip_followed(r.tip_followed_llm, r.tip_followed_emb) AS is_followed,
               coalesce(fm.is_harm, r.outcome_value < 0) AS harmful
          FROM ctxgraph.tip_retrievals AS r
          LEFT JOIN ctxgraph.attempts AS a ON a.skill = r.skill AND a.id = r.attempt_id
          LEFT JOIN ctxgraph.failure_modes AS fm ON fm.name = a.failure_mode
         WHERE (refresh_tip_stats.skill IS NULL OR r.skill = refresh_tip_stats.skill)
           AND (refresh_tip_stats.tip_ids IS NULL OR r.tip_id = ANY (refresh_tip_stats.tip_ids))
    ),
    per_tip AS (
        SELECT l.skill, l.tip_id,
               count(*) AS retrievals,
               count(l.credit) AS scored,
               count(DISTINCT coalesce(l.attempt_id, -l.id)) FILTER (WHERE l.credit IS NOT NULL) AS attempts,
               coalesce(sum(l.credit), 0) AS outcome_sum,
               coalesce(sum(l.credit * l.weight), 0) AS weighted_sum,
               count(l.is_followed) FILTER (WHERE l.credit IS NOT NULL) AS follow_known,
               count(*) FILTER (WHERE l.credit IS NOT NULL AND l.is_followed) AS followed,
               count(*) FILTER (WHERE l.credit IS NOT NULL AND l.is_followed AND l.harmful) AS harm,
               max(l.retrieved_at) AS last_retrieved_at
          FROM log_rows AS l
         GROUP BY l.skill, l.tip_id
    )
    UPDATE ctxgraph.tip_stats AS s
       SET retrievals = coalesce(p.retrievals, 0),
           scored = coalesce(p.scored, 0),
           attempts = coalesce(p.attempts, 0),
           outcome_sum = coalesce(p.outcome_sum, 0),
           weighted_sum = coalesce(p.weighted_sum, 0),
           follow_known = coalesce(p.follow_known, 0),
           followed = coalesce(p.followed, 0),
           harm = coalesce(p.harm, 0),
           last_retrieved_at = p.last_retrieved_at,
           refreshed_at = now()
      FROM ctxgraph.tip_stats AS target
      LEFT JOIN per_tip AS p ON p.skill = target.skill AND p.tip_id = target.tip_id
     WHERE s.skill = target.skill AND s.tip_id = target.tip_id
       AND (refresh_tip_stats.skill IS NULL OR target.skill = refresh_tip_stats.skill)
       AND (refresh_tip_stats.tip_ids IS NULL OR target.tip_id = ANY (refresh_tip_stats.tip_ids));
    GET DIAGNOSTICS refreshed = ROW_COUNT;
    RETURN refreshed;
END
$$;

COMMENT ON FUNCTION ctxgraph.refresh_tip_stats(text, bigint[]) IS
    'Recomputes ctxgraph.tip_stats exactly from the log for the given tips (NULL: all tips of the skill, or of every skill); returns the tips refreshed. The triggers call it; call it by hand only to rebuild.';

-- The triggers: one per event because a trigger with transition tables takes one event. They
-- run as the owner (SECURITY DEFINER): the writer and the scorer change the log, but only the
-- owner maintains the aggregates.
CREATE OR REPLACE FUNCTION ctxgraph._tip_stats_after_retrievals_change()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
DECLARE
    batch record;
BEGIN
    IF TG_OP = 'INSERT' THEN
        FOR batch IN SELECT n.skill, array_agg(DISTINCT n.tip_id) AS tip_ids FROM new_rows AS n GROUP BY n.skill LOOP
            PERFORM ctxgraph.refresh_tip_stats(batch.skill, batch.tip_ids);
        END LOOP;
    ELSIF TG_OP = 'DELETE' THEN
        FOR batch IN SELECT o.skill, array_agg(DISTINCT o.tip_id) AS tip_ids FROM old_rows AS o GROUP BY o.skill LOOP
            PERFORM ctxgraph.refresh_tip_stats(batch.skill, batch.tip_ids);
        END LOOP;
    ELSE
        -- Only rows whose aggregated columns changed; a no-op UPDATE costs nothing.
        FOR batch IN
            SELECT changed.skill, array_agg(DISTINCT changed.tip_id) AS tip_ids
              FROM (SELECT o.skill, o.tip_id FROM old_rows AS o JOIN new_rows AS n ON n.skill = o.skill AND n.id = o.id
                     WHERE (o.tip_id, o.attempt_id, o.outcome_value, o.outcome_confidence, o.tip_followed_llm,
                            o.tip_followed_emb, o.retrieved_at)
                           IS DISTINCT FROM
                           (n.tip_id, n.attempt_id, n.outcome_value, n.outcome_confidence, n.tip_followed_llm,
                            n.tip_followed_emb, n.retrieved_at)
                    UNION ALL
                    SELECT n.skill, n.tip_id FROM old_rows AS o JOIN new_rows AS n ON n.skill = o.skill AND n.id = o.id
                     WHERE n.tip_id <> o.tip_id) AS changed
             GROUP BY changed.skill
        LOOP
            PERFORM ctxgraph.refresh_tip_stats(batch.skill, batch.tip_ids);
        END LOOP;
    END IF;
    RETURN NULL;
END
$$;

-- A changed failure mode changes harm for every tip retrieved in that attempt.
CREATE OR REPLACE FUNCTION ctxgraph._tip_stats_after_attempts_update()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
DECLARE
    batch record;
BEGIN
    FOR batch IN
        SELECT r.skill, array_agg(DISTINCT r.tip_id) AS tip_ids
          FROM old_rows AS o
          JOIN new_rows AS n ON n.skill = o.skill AND n.id = o.id
          JOIN ctxgraph.tip_retrievals AS r ON r.skill = n.skill AND r.attempt_id = n.id
         WHERE o.failure_mode IS DISTINCT FROM n.failure_mode
         GROUP BY r.skill
    LOOP
        PERFORM ctxgraph.refresh_tip_stats(batch.skill, batch.tip_ids);
    END LOOP;
    RETURN NULL;
END
$$;

-- A failure mode that now counts (or no longer counts) as harm changes harm everywhere.
CREATE OR REPLACE FUNCTION ctxgraph._tip_stats_after_failure_modes_change()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
BEGIN
    PERFORM ctxgraph.refresh_tip_stats();
    RETURN NULL;
END
$$;

-- New follow coefficients or threshold re-weigh every row: rebuild all stats.
CREATE OR REPLACE FUNCTION ctxgraph._tip_stats_after_parameters_change()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM new_rows AS n WHERE n.name LIKE 'follow.%') THEN
        PERFORM ctxgraph.refresh_tip_stats();
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER tip_stats_after_insert AFTER INSERT ON ctxgraph.tip_retrievals
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ctxgraph._tip_stats_after_retrievals_change();
CREATE OR REPLACE TRIGGER tip_stats_after_update AFTER UPDATE ON ctxgraph.tip_retrievals
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ctxgraph._tip_stats_after_retrievals_change();
CREATE OR REPLACE TRIGGER tip_stats_after_delete AFTER DELETE ON ctxgraph.tip_retrievals
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ctxgraph._tip_stats_after_retrievals_change();
CREATE OR REPLACE TRIGGER tip_stats_after_update AFTER UPDATE ON ctxgraph.attempts
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ctxgraph._tip_stats_after_attempts_update();
CREATE OR REPLACE TRIGGER tip_stats_after_update AFTER UPDATE ON ctxgraph.failure_modes
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ctxgraph._tip_stats_after_failure_modes_change();
CREATE OR REPLACE TRIGGER tip_stats_after_update AFTER UPDATE ON ctxgraph.parameters
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION ctxgraph._tip_stats_after_parameters_change();

COMMENT ON FUNCTION ctxgraph._tip_stats_after_retrievals_change() IS 'Private trigger: refreshes tip_stats for the tips a statement on tip_retrievals touched.';
COMMENT ON FUNCTION ctxgraph._tip_stats_after_attempts_update() IS 'Private trigger: refreshes tip_stats when an attempt''s failure mode changes.';
COMMENT ON FUNCTION ctxgraph._tip_stats_after_failure_modes_change() IS 'Private trigger: rebuilds tip_stats when a failure mode changes.';
COMMENT ON FUNCTION ctxgraph._tip_stats_after_parameters_change() IS 'Private trigger: rebuilds tip_stats when a follow.* parameter changes.';

REVOKE ALL ON FUNCTION ctxgraph.refresh_tip_stats(text, bigint[]),
    ctxgraph._tip_stats_after_retrievals_change(), ctxgraph._tip_stats_after_attempts_update(),
    ctxgraph._tip_stats_after_parameters_change(), ctxgraph._tip_stats_after_failure_modes_change() FROM PUBLIC;

-- Partitions for existing skills, and the statement triggers on every partition (statements
-- aimed straight at stig.tip_retrievals fire the partition's triggers, not the parent's).
DROP FUNCTION ctxgraph._tip_log_aggregate(text, bigint);
DO $$ BEGIN PERFORM ctxgraph.ensure_skill_partitions(); END $$;
DO $$ BEGIN PERFORM ctxgraph.refresh_tip_stats(); END $$;

COMMIT;
