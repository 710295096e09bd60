-- Deploy ctxgraph:table_tip_stats to pg
-- requires: table_tip_stats@v0.5.0
-- requires: view_scored_retrievals

-- Rework: delta maintenance. Until now every write recomputed each touched tip from its whole
-- history, so a write cost grew with the tip's age (an attempt's write path 12x its cost without
-- the aggregates, a scorer write-back 51x, at 1M rows). Now the figures are kept at two levels:
--
--   ctxgraph.tip_attempt_stats  one row per (tip, attempt) with a scored retrieval: that pair's
--                               counts and sums, recomputed exactly from scored_retrievals (an
--                               attempt holds a handful of rows; an index lookup on its id);
--   ctxgraph.tip_stats          per tip, moved by the difference between a touched pair's new and
--                               stored figures, and by the rows a statement added or removed.
--
-- Distinct attempts stay exact (a pair row exists or not), the arithmetic stays in
-- scored_retrievals (pairs are recomputed from it, never from a copy of the rule), and the old
-- figures of a changed row never need recomputing: they are the stored pair's. Sums of float8
-- moved by differences equal the from-scratch sums up to rounding in the last bits (1e-15
-- relative); refresh_tip_stats() rebuilds both tables exactly, and runs when a follow.* parameter
-- or a failure mode's harm changes (every row's figures change).
--
-- Concurrency as before: the tips' stats rows are locked first, in (skill, tip) order, and the
-- pairs are recomputed in a later statement, whose snapshot (READ COMMITTED) includes every
-- transaction that held those locks before. A pair row is only written under its tip's lock.
BEGIN;

CREATE TABLE ctxgraph.tip_attempt_stats (
    skill        text NOT NULL,
    tip_id       bigint NOT NULL,
    attempt_key  bigint NOT NULL,
    rule_id      text NOT NULL,
    scored       bigint NOT NULL CHECK (scored > 0),
    outcome_sum  double precision NOT NULL,
    weighted_sum double precision NOT NULL,
    follow_known bigint NOT NULL,
    followed     bigint NOT NULL,
    harm         bigint NOT NULL,
    PRIMARY KEY (skill, tip_id, attempt_key),
    FOREIGN KEY (skill, tip_id) REFERENCES ctxgraph.tips (skill, id) ON DELETE CASCADE
) PARTITION BY LIST (skill);

COMMENT ON TABLE ctxgraph.tip_attempt_stats IS
    'Per (tip, attempt) figures of the scored retrievals, kept by the tip_stats triggers; tip_stats moves by their changes.';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.skill IS 'The skill (partition key).';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.tip_id IS 'The tip.';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.attempt_key IS 'scored_retrievals.attempt_key: the attempt, or minus the retrieval id of an unlinked row.';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.rule_id IS 'The rule of the attempt''s retrievals of the tip.';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.scored IS 'Scored retrievals of the tip in the attempt (rows with none are not kept).';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.outcome_sum IS 'Sum of credit over them.';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.weighted_sum IS 'Sum of credit * follow_weight over them.';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.follow_known IS 'Those with a follow verdict.';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.followed IS 'Those whose verdict is followed.';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.harm IS 'Those followed in an attempt that broke the system.';

GRANT SELECT ON ctxgraph.tip_attempt_stats TO ctxgraph_analyst;

-- _tip_pair_aggregate: one (tip, attempt) pair's figures from scored_retrievals. Two index paths:
-- an attempt's rows by (skill, attempt_id), an unlinked row by its primary key.
CREATE FUNCTION ctxgraph._tip_pair_aggregate(skill text, tip_id bigint, attempt_key bigint)
RETURNS TABLE (
    rule_id text, scored bigint, outcome_sum double precision, weighted_sum double precision,
    follow_known bigint, followed bigint, harm bigint
)
LANGUAGE sql STABLE
AS $$
    SELECT min(s.rule_id), count(*), coalesce(sum(s.credit), 0), coalesce(sum(s.credit * s.follow_weight), 0),
           count(s.followed), count(*) FILTER (WHERE s.followed), count(*) FILTER (WHERE s.followed AND s.harmful)
      FROM (SELECT s.* FROM ctxgraph.scored_retrievals AS s
             WHERE _tip_pair_aggregate.attempt_key > 0
               AND s.skill = _tip_pair_aggregate.skill AND s.attempt_id = _tip_pair_aggregate.attempt_key
               AND s.tip_id = _tip_pair_aggregate.tip_id
            UNION ALL
            SELECT s.* FROM ctxgraph.scored_retrievals AS s
             WHERE _tip_pair_aggregate.attempt_key < 0
               AND s.skill = _tip_pair_aggregate.skill AND s.retrieval_id = -_tip_pair_aggregate.attempt_key
               AND s.attempt_id IS NULL AND s.tip_id = _tip_pair_aggregate.tip_id) AS s
$$;

COMMENT ON FUNCTION ctxgraph._tip_pair_aggregate(text, bigint, bigint) IS
    'Private: one (tip, attempt) pair''s figures computed from scored_retrievals (the definition tip_attempt_stats must equal).';

-- _tip_stats_apply: the one place a change reaches the aggregates. Each element names a tip, the
-- attempt_key of a changed row, the row's sign in the retrieval count (+1 added, -1 removed, 0
-- neither), its retrieved_at, and whether it may have been the tip's latest retrieval and is
-- gone (then the latest is read again from the log; an index scan of that tip's rows, which only a
-- DELETE or a change of retrieved_at or tip_id can need).
CREATE FUNCTION ctxgraph._tip_stats_apply(skill text, tip_ids bigint[], attempt_keys bigint[], signs integer[],
                                          retrieved_ats timestamptz[], removals boolean[])
RETURNS integer
LANGUAGE plpgsql
SET plan_cache_mode = force_custom_plan
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    moved integer;
BEGIN
    -- 1. Every touched tip that still exists has a stats row; lock them in a fixed order.
    INSERT INTO ctxgraph.tip_stats AS s (skill, tip_id)
    SELECT t.skill, t.id FROM ctxgraph.tips AS t
     WHERE t.skill = _tip_stats_apply.skill AND t.id = ANY (_tip_stats_apply.tip_ids)
     ORDER BY t.id
    ON CONFLICT (skill, tip_id) DO NOTHING;
    PERFORM 1 FROM ctxgraph.tip_stats AS s
     WHERE s.skill = _tip_stats_apply.skill AND s.tip_id = ANY (_tip_stats_apply.tip_ids)
     ORDER BY s.tip_id
       FOR UPDATE;

    -- 2. In a fresh statement: each touched pair's figures now, against the stored ones; the pair
    --    rows replaced; each tip moved by the difference. All parts read the same snapshot, so
    --    "stored" is the pair table before this statement's own writes.
    WITH changes AS (
        SELECT c.tip_id, c.attempt_key, c.sign, c.retrieved_at, c.removal
          FROM unnest(_tip_stats_apply.tip_ids, _tip_stats_apply.attempt_keys, _tip_stats_apply.signs,
                      _tip_stats_apply.retrieved_ats, _tip_stats_apply.removals)
               AS c (tip_id, attempt_key, sign, retrieved_at, removal)
    ),
    pairs AS (
        SELECT DISTINCT c.tip_id, c.attempt_key FROM changes AS c
    ),
    fresh AS (
        SELECT p.tip_id, p.attempt_key, agg.*
          FROM pairs AS p
         CROSS JOIN LATERAL ctxgraph._tip_pair_aggregate(_tip_stats_apply.skill, p.tip_id, p.attempt_key) AS agg
    ),
    stored AS (
        SELECT a.* FROM ctxgraph.tip_attempt_stats AS a
          JOIN pairs AS p ON p.tip_id = a.tip_id AND p.attempt_key = a.attempt_key
         WHERE a.skill = _tip_stats_apply.skill
    ),
    gone AS (
        DELETE FROM ctxgraph.tip_attempt_stats AS a
         USING fresh AS f
         WHERE a.skill = _tip_stats_apply.skill AND a.tip_id = f.tip_id AND a.attempt_key = f.attempt_key
           AND f.scored = 0
    ),
    kept AS (
        INSERT INTO ctxgraph.tip_attempt_stats AS a (skill, tip_id, attempt_key, rule_id, scored, outcome_sum,
                                                     weighted_sum, follow_known, followed, harm)
        SELECT _tip_stats_apply.skill, f.tip_id, f.attempt_key, f.rule_id, f.scored, f.outcome_sum, f.weighted_sum,
               f.follow_known, f.followed, f.harm
          FROM fresh AS f
          JOIN ctxgraph.tips AS t ON t.skill = _tip_stats_apply.skill AND t.id = f.tip_id
         WHERE f.scored > 0
        ON CONFLICT (skill, tip_id, attempt_key) DO UPDATE
           SET (rule_id, scored, outcome_sum, weighted_sum, follow_known, followed, harm)
             = (excluded.rule_id, excluded.scored, excluded.outcome_sum, excluded.weighted_sum,
                excluded.follow_known, excluded.followed, excluded.harm)
    ),
    pair_delta AS (
        SELECT f.tip_id,
               sum((f.scored > 0)::integer - (o.tip_id IS NOT NULL)::integer) AS attempts,
               sum(f.scored - coalesce(o.scored, 0)) AS scored,
               sum(f.outcome_sum - coalesce(o.outcome_sum, 0)) AS outcome_sum,
               sum(f.weighted_sum - coalesce(o.weighted_sum, 0)) AS weighted_sum,
               sum(f.follow_known - coalesce(o.follow_known, 0)) AS follow_known,
               sum(f.followed - coalesce(o.followed, 0)) AS followed,
               sum(f.harm - coalesce(o.harm, 0)) AS harm
          FROM fresh AS f
          LEFT JOIN stored AS o ON o.tip_id = f.tip_id AND o.attempt_key = f.attempt_key
         GROUP BY f.tip_id
    ),
    row_delta AS (
        SELECT c.tip_id, sum(c.sign) AS retrievals,
               max(c.retrieved_at) FILTER (WHERE c.sign > 0) AS latest_added,
               max(c.retrieved_at) FILTER (WHERE c.removal) AS latest_removed
          FROM changes AS c
         GROUP BY c.tip_id
    )
    UPDATE ctxgraph.tip_stats AS s
       SET retrievals = s.retrievals + r.retrievals,
           attempts = s.attempts + coalesce(d.attempts, 0),
           scored = s.scored + coalesce(d.scored, 0),
           outcome_sum = s.outcome_sum + coalesce(d.outcome_sum, 0),
           weighted_sum = s.weighted_sum + coalesce(d.weighted_sum, 0),
           follow_known = s.follow_known + coalesce(d.follow_known, 0),
           followed = s.followed + coalesce(d.followed, 0),
           harm = s.harm + coalesce(d.harm, 0),
           last_retrieved_at = CASE
               WHEN r.latest_removed >= s.last_retrieved_at
                   THEN (SELECT max(l.retrieved_at) FROM ctxgraph.tip_retrievals AS l
                          WHERE l.skill = s.skill AND l.tip_id = s.tip_id)
               ELSE greatest(s.last_retrieved_at, r.latest_added)
           END,
           refreshed_at = now()
      FROM row_delta AS r
      LEFT JOIN pair_delta AS d ON d.tip_id = r.tip_id
     WHERE s.skill = _tip_stats_apply.skill AND s.tip_id = r.tip_id;
    GET DIAGNOSTICS moved = ROW_COUNT;
    RETURN moved;
END
$$;

COMMENT ON FUNCTION ctxgraph._tip_stats_apply(text, bigint[], bigint[], integer[], timestamptz[], boolean[]) IS
    'Private: moves tip_stats and tip_attempt_stats by the changed rows of one statement (the triggers call it).';

-- refresh_tip_stats: the from-scratch rebuild, now of both levels. Unchanged signature and answer.
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

    -- 2. The pairs, rebuilt from scored_retrievals (fresh snapshot under READ COMMITTED).
    DELETE FROM ctxgraph.tip_attempt_stats AS a
     WHERE (refresh_tip_stats.skill IS NULL OR a.skill = refresh_tip_stats.skill)
       AND (refresh_tip_stats.tip_ids IS NULL OR a.tip_id = ANY (refresh_tip_stats.tip_ids));
    INSERT INTO ctxgraph.tip_attempt_stats (skill, tip_id, attempt_key, rule_id, scored, outcome_sum, weighted_sum,
                                            follow_known, followed, harm)
    SELECT s.skill, s.tip_id, s.attempt_key, min(s.rule_id), count(*), coalesce(sum(s.credit), 0),
           coalesce(sum(s.credit * s.follow_weight), 0), count(s.followed), count(*) FILTER (WHERE s.followed),
           count(*) FILTER (WHERE s.followed AND s.harmful)
      FROM ctxgraph.scored_retrievals AS s
     WHERE (refresh_tip_stats.skill IS NULL OR s.skill = refresh_tip_stats.skill)
       AND (refresh_tip_stats.tip_ids IS NULL OR s.tip_id = ANY (refresh_tip_stats.tip_ids))
     GROUP BY s.skill, s.tip_id, s.attempt_key;

    -- 3. The tips, from the log.
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
    'Rebuilds ctxgraph.tip_stats and ctxgraph.tip_attempt_stats exactly from the log for the given tips (NULL: all tips of the skill, or of every skill); returns the tips refreshed. The triggers keep both by deltas; call it by hand only to rebuild.';

-- The retrieval triggers: the changed rows of the statement, grouped by skill, as signed elements.
-- An UPDATE contributes the old and the new side of each row whose aggregated columns changed
-- (a no-op UPDATE costs nothing); a row keeps its place as the tip's latest unless its
-- retrieved_at or tip changed.
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
        FOR batch IN
            SELECT n.skill, array_agg(n.tip_id) AS tip_ids, array_agg(coalesce(n.attempt_id, -n.id)) AS attempt_keys,
                   array_agg(1) AS signs, array_agg(n.retrieved_at) AS retrieved_ats, array_agg(false) AS removals
              FROM new_rows AS n GROUP BY n.skill
        LOOP
            PERFORM ctxgraph._tip_stats_apply(batch.skill, batch.tip_ids, batch.attempt_keys, batch.signs,
                                              batch.retrieved_ats, batch.removals);
        END LOOP;
    ELSIF TG_OP = 'DELETE' THEN
        FOR batch IN
            SELECT o.skill, array_agg(o.tip_id) AS tip_ids, array_agg(coalesce(o.attempt_id, -o.id)) AS attempt_keys,
                   array_agg(-1) AS signs, array_agg(o.retrieved_at) AS retrieved_ats, array_agg(true) AS removals
              FROM old_rows AS o GROUP BY o.skill
        LOOP
            PERFORM ctxgraph._tip_stats_apply(batch.skill, batch.tip_ids, batch.attempt_keys, batch.signs,
                                              batch.retrieved_ats, batch.removals);
        END LOOP;
    ELSE
        FOR batch IN
            SELECT e.skill, array_agg(e.tip_id) AS tip_ids, array_agg(e.attempt_key) AS attempt_keys,
                   array_agg(e.sign) AS signs, array_agg(e.retrieved_at) AS retrieved_ats,
                   array_agg(e.removal) AS removals
              FROM (SELECT o.skill, o.id, o.tip_id AS old_tip, n.tip_id AS new_tip, o.attempt_id AS old_attempt,
                           n.attempt_id AS new_attempt, o.retrieved_at AS old_at, n.retrieved_at AS new_at
                      FROM old_rows AS o JOIN new_rows AS n ON n.skill = o.skill AND n.id = o.id
                     WHERE (o.tip_id, o.attempt_id, o.rule_id, o.outcome_value, o.outcome_confidence,
                            o.tip_followed_llm, o.tip_followed_emb, o.follow_probability, o.retrieved_at)
                           IS DISTINCT FROM
                           (n.tip_id, n.attempt_id, n.rule_id, n.outcome_value, n.outcome_confidence,
                            n.tip_followed_llm, n.tip_followed_emb, n.follow_probability, n.retrieved_at)) AS c
             CROSS JOIN LATERAL (
                   VALUES (c.skill, c.old_tip, coalesce(c.old_attempt, -c.id), -1, c.old_at,
                           c.old_at IS DISTINCT FROM c.new_at OR c.old_tip <> c.new_tip),
                          (c.skill, c.new_tip, coalesce(c.new_attempt, -c.id), 1, c.new_at, false)
                   ) AS e (skill, tip_id, attempt_key, sign, retrieved_at, removal)
             GROUP BY e.skill
        LOOP
            PERFORM ctxgraph._tip_stats_apply(batch.skill, batch.tip_ids, batch.attempt_keys, batch.signs,
                                              batch.retrieved_ats, batch.removals);
        END LOOP;
    END IF;
    RETURN NULL;
END
$$;

-- A changed failure mode changes harm in every pair of that attempt: recompute those pairs.
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
        SELECT r.skill, array_agg(r.tip_id) AS tip_ids, array_agg(r.attempt_id) AS attempt_keys,
               array_agg(0) AS signs, array_agg(NULL::timestamptz) AS retrieved_ats, array_agg(false) AS removals
          FROM (SELECT DISTINCT r.skill, r.tip_id, r.attempt_id
                  FROM old_rows AS o
                  JOIN new_rows AS n ON n.skill = o.skill AND n.id = o.id
                  JOIN ctxgraph.tip_retrievals AS r ON r.skill = n.skill AND r.attempt_id = n.id
                 WHERE o.failure_mode IS DISTINCT FROM n.failure_mode) AS r
         GROUP BY r.skill
    LOOP
        PERFORM ctxgraph._tip_stats_apply(batch.skill, batch.tip_ids, batch.attempt_keys, batch.signs,
                                          batch.retrieved_ats, batch.removals);
    END LOOP;
    RETURN NULL;
END
$$;

REVOKE ALL ON FUNCTION ctxgraph._tip_pair_aggregate(text, bigint, bigint),
    ctxgraph._tip_stats_apply(text, bigint[], bigint[], integer[], timestamptz[], boolean[]) FROM PUBLIC;

-- Partitions of the new table for existing skills (add_skill makes them for later ones), then
-- both levels built from the log.
DO $$ BEGIN PERFORM ctxgraph.ensure_skill_partitions(); END $$;
DO $$ BEGIN PERFORM ctxgraph.refresh_tip_stats(); END $$;

COMMIT;
