-- Deploy ctxgraph:table_tip_stats to pg
-- requires: table_tip_stats@v0.3.0
-- requires: view_scored_retrievals

-- Rework: the maintained aggregates derive from ctxgraph.scored_retrievals, the one definition of a
-- retrieval's credit, follow weight and harm, instead of spelling that arithmetic again. It also
-- carries what was edited in place after the release (per-tip recompute, SECURITY DEFINER
-- triggers, the failure_modes trigger), so a database deployed at an earlier tag ends the same.
-- Every function and trigger is replaced in place; the table is untouched; all stats are rebuilt.

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

-- _tip_log_aggregate: one tip's aggregates: counts over its log rows, and every outcome and follow
-- figure over its rows of ctxgraph.scored_retrievals (credit, follow weight, harm defined there). Written per tip so
-- the plan is always an index lookup on (skill, tip_id) plus a primary-key lookup per row for the
-- failure mode, whatever the statistics say: autovacuum never analyzes partitioned parents, and
-- without parent statistics a join-shaped recompute misestimated by 1,000x and scanned the log.
CREATE OR REPLACE FUNCTION ctxgraph._tip_log_aggregate(skill text, tip_id bigint)
RETURNS TABLE (
    retrievals bigint, scored bigint, attempts bigint, outcome_sum double precision,
    weighted_sum double precision, follow_known bigint, followed bigint, harm bigint,
    last_retrieved_at timestamptz
)
LANGUAGE sql STABLE
AS $$
    SELECT logged.retrievals, scored.scored, scored.attempts, scored.outcome_sum, scored.weighted_sum,
           scored.follow_known, scored.followed, scored.harm, logged.last_retrieved_at
      FROM (SELECT count(*) AS retrievals, max(r.retrieved_at) AS last_retrieved_at
              FROM ctxgraph.tip_retrievals AS r
             WHERE r.skill = _tip_log_aggregate.skill AND r.tip_id = _tip_log_aggregate.tip_id) AS logged,
           (SELECT count(*) AS scored,
                   count(DISTINCT s.attempt_key) AS attempts,
                   coalesce(sum(s.credit), 0) AS outcome_sum,
                   coalesce(sum(s.credit * s.follow_weight), 0) AS weighted_sum,
                   count(s.followed) AS follow_known,
                   count(*) FILTER (WHERE s.followed) AS followed,
                   count(*) FILTER (WHERE s.followed AND s.harmful) AS harm
              FROM ctxgraph.scored_retrievals AS s
             WHERE s.skill = _tip_log_aggregate.skill AND s.tip_id = _tip_log_aggregate.tip_id) AS scored
$$;

COMMENT ON FUNCTION ctxgraph._tip_log_aggregate(text, bigint) IS
    'Private: one tip''s tip_stats figures computed from its log rows (the definition the maintained aggregates must equal).';

-- refresh_tip_stats: recomputes the stats of the given tips (all tips of the skill when tip_ids
-- is NULL; every skill when skill is NULL) exactly from the log. Returns the tips refreshed.
-- Custom plans only (a generic plan cannot use the tip ids as an index condition) and no JIT (a
-- refresh of a few tips never repays compiling).
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

REVOKE ALL ON FUNCTION ctxgraph.refresh_tip_stats(text, bigint[]), ctxgraph._tip_log_aggregate(text, bigint),
    ctxgraph._tip_stats_after_retrievals_change(), ctxgraph._tip_stats_after_attempts_update(),
    ctxgraph._tip_stats_after_parameters_change(), ctxgraph._tip_stats_after_failure_modes_change() FROM PUBLIC;

-- Partitions for existing skills, and the statement triggers on every partition (statements
-- aimed straight at stig.tip_retrievals fire the partition's triggers, not the parent's).
DO $$ BEGIN PERFORM ctxgraph.ensure_skill_partitions(); END $$;
DO $$ BEGIN PERFORM ctxgraph.refresh_tip_stats(); END $$;

COMMIT;
