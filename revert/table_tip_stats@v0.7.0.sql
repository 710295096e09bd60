-- Revert ctxgraph:table_tip_stats from pg

-- Back to @v0.5.0: every write recomputes the touched tips from their history. The three
-- functions take their @v0.5.0 bodies (refresh_tip_stats and the attempts trigger as @v0.4.0
-- shipped them, the retrievals trigger as @v0.5.0 did); the maintained levels, their helpers and tip_stats' runs and evidence_version go.
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph.refresh_tip_stats(skill text DEFAULT NULL, tip_ids bigint[] DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
SET plan_cache_mode = force_custom_plan
SET jit = off
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
    UPDATE ctxgraph.tip_stats AS s
       SET (retrievals, scored, attempts, outcome_sum, weighted_sum, follow_known, followed, harm,
            last_retrieved_at) = (SELECT agg.* FROM ctxgraph._tip_log_aggregate(s.skill, s.tip_id) AS agg),
           refreshed_at = now()
     WHERE (refresh_tip_stats.skill IS NULL OR s.skill = refresh_tip_stats.skill)
       AND (refresh_tip_stats.tip_ids IS NULL OR s.tip_id = ANY (refresh_tip_stats.tip_ids));
    GET DIAGNOSTICS refreshed = ROW_COUNT;
    RETURN refreshed;
END
$$;

COMMENT ON FUNCTION ctxgraph.refresh_tip_stats(text, bigint[]) IS
    'Recomputes ctxgraph.tip_stats exactly from the log for the given tips (NULL: all tips of the skill, or of every skill); returns the tips refreshed. The triggers call it; call it by hand only to rebuild.';

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
                            o.tip_followed_emb, o.follow_probability, o.retrieved_at)
                           IS DISTINCT FROM
                           (n.tip_id, n.attempt_id, n.outcome_value, n.outcome_confidence, n.tip_followed_llm,
                            n.tip_followed_emb, n.follow_probability, n.retrieved_at)
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

-- The TRUNCATE trigger, on the parent and on every skill's partition (copies, not inherited); IF
-- EXISTS, since a database deployed before this change gained it has neither.
DO $$
DECLARE
    rel regclass;
BEGIN
    FOR rel IN
        SELECT t.tgrelid::regclass FROM pg_catalog.pg_trigger AS t
         WHERE t.tgname = 'tip_stats_after_truncate' AND NOT t.tgisinternal
         ORDER BY t.tgrelid
    LOOP
        EXECUTE format('DROP TRIGGER tip_stats_after_truncate ON %s', rel);
    END LOOP;
END
$$;
DROP FUNCTION IF EXISTS ctxgraph._tip_stats_after_retrievals_truncate();
DROP FUNCTION ctxgraph._tip_stats_rebuild(text, bigint[]);
DROP FUNCTION ctxgraph._tip_stats_follow_apply(text, bigint[], bigint[], boolean[], double precision[],
                                                double precision[], boolean[], double precision[], double precision[]);
DROP FUNCTION ctxgraph._tip_stats_apply(text, bigint[], bigint[], integer[], timestamptz[], boolean[]);
DROP FUNCTION ctxgraph._tip_stats_lock(text, bigint[]);
DROP FUNCTION ctxgraph._rule_stats_apply(text, bigint[]);
DROP FUNCTION ctxgraph._tip_pair_aggregate(text, bigint, bigint);
DROP TABLE ctxgraph.rule_stats;
DROP TABLE ctxgraph.rule_attempt_stats;
DROP TABLE ctxgraph.tip_run_stats;
DROP TABLE ctxgraph.tip_rule_stats;
DROP TABLE ctxgraph.tip_attempt_stats;
ALTER TABLE ctxgraph.tip_stats DROP COLUMN evidence_version, DROP COLUMN runs;

DO $$ BEGIN PERFORM ctxgraph.refresh_tip_stats(); END $$;

COMMIT;
