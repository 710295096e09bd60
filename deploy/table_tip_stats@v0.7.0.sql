-- Deploy ctxgraph:table_tip_stats to pg
-- requires: table_tip_stats@v0.5.0
-- requires: view_scored_retrievals

-- Rework: delta maintenance. Until now every write recomputed each touched tip from its whole
-- history, so a write cost grew with the tip's age (an attempt's write path 12x its cost without
-- the aggregates, a scorer write-back 51x, at 1M rows), and eviction re-aggregated the whole log
-- on every call. Now the figures are kept at the levels their readers need:
--
--   ctxgraph.tip_attempt_stats   one row per (tip, attempt) with a scored retrieval: that pair's
--                                figures, recomputed exactly from scored_retrievals (an attempt
--                                holds a handful of rows; an index lookup on its id);
--   ctxgraph.tip_stats           per tip, moved by the difference between a touched pair's new
--                                and stored figures, and by the rows a statement added or removed;
--                                it also counts the tip's runs and an evidence version that every
--                                change of the tip's evidence increments;
--   ctxgraph.tip_rule_stats      per (tip, rule), the follow-weighted sums eviction compares with
--   ctxgraph.tip_run_stats       the rule's baseline, and per (tip, run) the units behind `runs`;
--   ctxgraph.rule_attempt_stats  per attempt, the rule's population for the baselines (its mean
--   ctxgraph.rule_stats          unit outcome, whether it broke the system), and per rule the sums.
--
-- A statement that changes only follow columns of scored rows (the scorer's write-back) moves
-- the pairs, (tip, rule) rows and tips by each row's change of follow branch instead
-- (_tip_stats_follow_apply): no pair is recomputed or probed for it.
--
-- Distinct attempts and runs stay exact (a row exists or not), the arithmetic stays in
-- scored_retrievals (pairs are recomputed from it, never from a copy of the rule), and the old
-- figures of a changed row never need recomputing: they are the stored pair's. Sums of float8
-- moved by differences equal the from-scratch sums up to rounding in the last bits (1e-15
-- relative); refresh_tip_stats() rebuilds every level exactly, and runs when a follow.* parameter
-- or a failure mode's harm changes (every row's figures change).
--
-- Concurrency: the tips' stats rows are locked first, in (skill, tip) order, and the pairs, the
-- (tip, rule) and (tip, run) rows are written only under their tip's lock, in a later statement
-- whose snapshot (READ COMMITTED) includes every transaction that held those locks before. An
-- attempt's row is recomputed from its pairs under a transaction-scoped advisory lock on the
-- attempt's slot (one of 256 per skill; taken after the tip locks, in slot order), and the
-- per-rule sums move by relative updates, which read the latest committed row. One statement
-- takes all its tips in that order, whichever maintenance calls it makes (_tip_stats_lock), and a
-- writer of log rows locks the rows before their tips (record_outcome, which changes an attempt
-- and then its rows, locks a scored attempt's rows first), so two single statements never deadlock
-- on the tips. A tip deleted under a writer is waited for and left out.
BEGIN;

ALTER TABLE ctxgraph.tip_stats
    ADD COLUMN runs bigint NOT NULL DEFAULT 0,
    ADD COLUMN evidence_version bigint NOT NULL DEFAULT 0;
COMMENT ON COLUMN ctxgraph.tip_stats.runs IS 'Distinct runs of the tip''s scored attempts.';
COMMENT ON COLUMN ctxgraph.tip_stats.evidence_version IS
    'Incremented by every change of the tip''s log rows: a fit that recorded the skill''s sum of versions is current while the sum is unchanged.';

CREATE TABLE ctxgraph.tip_attempt_stats (
    skill         text NOT NULL,
    tip_id        bigint NOT NULL,
    attempt_key   bigint NOT NULL,
    rule_id       text NOT NULL,
    run_id        text NOT NULL,
    scored        bigint NOT NULL CHECK (scored > 0),
    outcome_sum   double precision NOT NULL,
    weighted_sum  double precision NOT NULL,
    weight_sum    double precision NOT NULL,
    follow_known  bigint NOT NULL,
    followed      bigint NOT NULL,
    harm          bigint NOT NULL,
    harmful       boolean NOT NULL,
    retrieved_max timestamptz NOT NULL,
    PRIMARY KEY (skill, tip_id, attempt_key),
    FOREIGN KEY (skill, tip_id) REFERENCES ctxgraph.tips (skill, id) ON DELETE CASCADE
) PARTITION BY LIST (skill);
-- An attempt's pairs, for its row of rule_attempt_stats.
CREATE INDEX tip_attempt_stats_attempt ON ctxgraph.tip_attempt_stats (skill, attempt_key);

COMMENT ON TABLE ctxgraph.tip_attempt_stats IS
    'Per (tip, attempt) figures of the scored retrievals, kept by the tip_stats triggers; tip_stats moves by their changes.';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.skill IS 'The skill (partition key).';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.tip_id IS 'The tip.';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.attempt_key IS 'scored_retrievals.attempt_key: the attempt, or minus the retrieval id of an unlinked row.';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.rule_id IS 'The rule of the attempt''s retrievals of the tip.';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.run_id IS 'The run of those retrievals.';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.scored IS 'Scored retrievals of the tip in the attempt (rows with none are not kept).';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.outcome_sum IS 'Sum of credit over them.';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.weighted_sum IS 'Sum of credit * follow_weight over them.';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.weight_sum IS 'Sum of follow_weight over them.';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.follow_known IS 'Those with a follow verdict.';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.followed IS 'Those whose verdict is followed.';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.harm IS 'Those followed in an attempt that broke the system.';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.harmful IS 'Whether any of them is harmful (the attempt broke the system).';
COMMENT ON COLUMN ctxgraph.tip_attempt_stats.retrieved_max IS 'Latest retrieved_at among them.';

CREATE TABLE ctxgraph.tip_rule_stats (
    skill        text NOT NULL,
    tip_id       bigint NOT NULL,
    rule_id      text NOT NULL,
    units        bigint NOT NULL CHECK (units > 0),
    followed_n   double precision NOT NULL,
    followed_sum double precision NOT NULL,
    harm_n       double precision NOT NULL,
    PRIMARY KEY (skill, tip_id, rule_id),
    FOREIGN KEY (skill, tip_id) REFERENCES ctxgraph.tips (skill, id) ON DELETE CASCADE
) PARTITION BY LIST (skill);

COMMENT ON TABLE ctxgraph.tip_rule_stats IS
    'Per (tip, rule): the tip''s attempts at the rule as eviction weighs them (one unit per attempt: its mean credit and mean follow weight), kept by the tip_stats triggers.';
COMMENT ON COLUMN ctxgraph.tip_rule_stats.skill IS 'The skill (partition key).';
COMMENT ON COLUMN ctxgraph.tip_rule_stats.tip_id IS 'The tip.';
COMMENT ON COLUMN ctxgraph.tip_rule_stats.rule_id IS 'The rule of the attempts.';
COMMENT ON COLUMN ctxgraph.tip_rule_stats.units IS 'The tip''s scored attempts at the rule.';
COMMENT ON COLUMN ctxgraph.tip_rule_stats.followed_n IS 'Sum over them of the mean follow weight.';
COMMENT ON COLUMN ctxgraph.tip_rule_stats.followed_sum IS 'Sum over them of mean follow weight * mean credit.';
COMMENT ON COLUMN ctxgraph.tip_rule_stats.harm_n IS 'Sum over those that broke the system of the mean follow weight.';

CREATE TABLE ctxgraph.tip_run_stats (
    skill   text NOT NULL,
    tip_id  bigint NOT NULL,
    run_id  text NOT NULL,
    units   bigint NOT NULL CHECK (units > 0),
    PRIMARY KEY (skill, tip_id, run_id),
    FOREIGN KEY (skill, tip_id) REFERENCES ctxgraph.tips (skill, id) ON DELETE CASCADE
) PARTITION BY LIST (skill);

COMMENT ON TABLE ctxgraph.tip_run_stats IS
    'Per (tip, run): the tip''s scored attempts in the run, so tip_stats.runs moves exactly; kept by the tip_stats triggers.';
COMMENT ON COLUMN ctxgraph.tip_run_stats.skill IS 'The skill (partition key).';
COMMENT ON COLUMN ctxgraph.tip_run_stats.tip_id IS 'The tip.';
COMMENT ON COLUMN ctxgraph.tip_run_stats.run_id IS 'The run.';
COMMENT ON COLUMN ctxgraph.tip_run_stats.units IS 'The tip''s scored attempts in it.';

CREATE TABLE ctxgraph.rule_attempt_stats (
    skill       text NOT NULL,
    attempt_key bigint NOT NULL,
    rule_id     text NOT NULL,
    units       bigint NOT NULL CHECK (units > 0),
    outcome_sum double precision NOT NULL,
    harmful     boolean NOT NULL,
    PRIMARY KEY (skill, attempt_key)
) PARTITION BY LIST (skill);

COMMENT ON TABLE ctxgraph.rule_attempt_stats IS
    'Per attempt with a scored retrieval: its rule, the tips it scored (units) and their summed mean credit, kept by the tip_stats triggers; the population of the rule baselines.';
COMMENT ON COLUMN ctxgraph.rule_attempt_stats.skill IS 'The skill (partition key).';
COMMENT ON COLUMN ctxgraph.rule_attempt_stats.attempt_key IS 'scored_retrievals.attempt_key.';
COMMENT ON COLUMN ctxgraph.rule_attempt_stats.rule_id IS 'The attempt''s rule.';
COMMENT ON COLUMN ctxgraph.rule_attempt_stats.units IS 'Tips with a scored retrieval in the attempt.';
COMMENT ON COLUMN ctxgraph.rule_attempt_stats.outcome_sum IS 'Sum over them of their mean credit; outcome_sum / units is the attempt''s outcome.';
COMMENT ON COLUMN ctxgraph.rule_attempt_stats.harmful IS 'Whether the attempt broke the system.';

CREATE TABLE ctxgraph.rule_stats (
    skill            text NOT NULL,
    rule_id          text NOT NULL,
    attempts         bigint NOT NULL DEFAULT 0,
    outcome_sum      double precision NOT NULL DEFAULT 0,
    harmful_attempts bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (skill, rule_id)
) PARTITION BY LIST (skill);

COMMENT ON TABLE ctxgraph.rule_stats IS
    'Per rule: its scored attempts, the sum of their outcomes and how many broke the system (the baseline eviction compares a tip with), moved by the tip_stats triggers.';
COMMENT ON COLUMN ctxgraph.rule_stats.skill IS 'The skill (partition key).';
COMMENT ON COLUMN ctxgraph.rule_stats.rule_id IS 'The rule.';
COMMENT ON COLUMN ctxgraph.rule_stats.attempts IS 'Attempts with a scored retrieval (0 once they are all gone).';
COMMENT ON COLUMN ctxgraph.rule_stats.outcome_sum IS 'Sum of those attempts'' outcomes (rule_attempt_stats.outcome_sum / units).';
COMMENT ON COLUMN ctxgraph.rule_stats.harmful_attempts IS 'Those that broke the system.';

GRANT SELECT ON ctxgraph.tip_attempt_stats, ctxgraph.tip_rule_stats, ctxgraph.tip_run_stats,
    ctxgraph.rule_attempt_stats, ctxgraph.rule_stats TO ctxgraph_analyst;

-- _tip_pair_aggregate: one (tip, attempt) pair's figures from scored_retrievals, the definition a
-- tip_attempt_stats row must equal (verify and the tests compare them; _tip_stats_apply computes
-- the same for all the pairs a statement touches at once, attempt by attempt). Two index paths:
-- an attempt's rows by (skill, attempt_id), an unlinked row by its primary key. The attempt's rows
-- are read by attempt alone and the tip is picked from them after an OFFSET 0 fence, so that no
-- plan can read the pair through the (skill, tip_id) index instead: a plan made before the log had
-- statistics sees both indexes at equal cost, and by the tip's it reads every row of the tip for
-- each pair, a number that grows with the log (a median of 87 at 1M rows, 859 at 10M), where an
-- attempt holds a handful.
CREATE FUNCTION ctxgraph._tip_pair_aggregate(skill text, tip_id bigint, attempt_key bigint)
RETURNS TABLE (
    rule_id text, run_id text, scored bigint, outcome_sum double precision, weighted_sum double precision,
    weight_sum double precision, follow_known bigint, followed bigint, harm bigint, harmful boolean,
    retrieved_max timestamptz
)
LANGUAGE sql STABLE
AS $$
    SELECT min(s.rule_id), min(s.run_id), count(*), coalesce(sum(s.credit), 0),
           coalesce(sum(s.credit * s.follow_weight), 0), coalesce(sum(s.follow_weight), 0), count(s.followed),
           count(*) FILTER (WHERE s.followed), count(*) FILTER (WHERE s.followed AND s.harmful),
           coalesce(bool_or(s.harmful), false), max(s.retrieved_at)
      FROM (SELECT a.* FROM (SELECT s.* FROM ctxgraph.scored_retrievals AS s
                               WHERE _tip_pair_aggregate.attempt_key > 0
                                 AND s.skill = _tip_pair_aggregate.skill AND s.attempt_id = _tip_pair_aggregate.attempt_key
                              OFFSET 0) AS a
             WHERE a.tip_id = _tip_pair_aggregate.tip_id
            UNION ALL
            SELECT s.* FROM ctxgraph.scored_retrievals AS s
             WHERE _tip_pair_aggregate.attempt_key < 0
               AND s.skill = _tip_pair_aggregate.skill AND s.retrieval_id = -_tip_pair_aggregate.attempt_key
               AND s.attempt_id IS NULL AND s.tip_id = _tip_pair_aggregate.tip_id) AS s
$$;

COMMENT ON FUNCTION ctxgraph._tip_pair_aggregate(text, bigint, bigint) IS
    'Private: one (tip, attempt) pair''s figures computed from scored_retrievals (the definition tip_attempt_stats must equal).';

-- _rule_stats_apply: recomputes the given attempts' rows of rule_attempt_stats from their pairs
-- and moves rule_stats by the difference. Called after the pairs of those attempts changed.
CREATE FUNCTION ctxgraph._rule_stats_apply(skill text, attempt_keys bigint[])
RETURNS void
LANGUAGE plpgsql
-- Generic plans, always: every lookup is by key (= ANY of the arrays), which a generic plan serves
-- as well whatever the batch's size, and planning these statements afresh cost more than running
-- them (record_outcome 5.8 ms with the plan cache's choice, 4.4 ms forced generic; the plan cache
-- also plans the first five calls of every session afresh).
-- No sequential scans (see _tip_stats_apply): a generic plan made while a level was empty probes
-- it by scanning it. Nor a scan on skill alone: the stored rows are read one key at a time, and
-- the rows that go are deleted only when there are any (see _tip_stats_apply).
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    -- The attempts, once each. Every lookup below is by (skill, attempt_key) of them: with the
    -- partitioned parents unanalysed (autovacuum never analyses them) a join to a set of keys was
    -- planned as a scan of the skill's every attempt row (199,500 at 1M retrievals) for one
    -- attempt's outcome.
    keys bigint[] := ARRAY(SELECT DISTINCT u.key FROM unnest(_rule_stats_apply.attempt_keys) AS u (key)
                            WHERE u.key IS NOT NULL);
BEGIN
    -- Another transaction may be changing other tips' pairs of the same attempt: whoever holds
    -- the attempt's lock recomputes it, and the next holder's fresh snapshot sees that commit.
    -- An attempt's lock is one of 256 slots per skill (attempt_key mod 256, made non-negative for
    -- the legacy rows' negative keys), not a lock of its own: a transaction that touches every
    -- attempt of a long log holds at most 256 of them, where one lock per attempt overflows the
    -- shared lock table (53200) past a few thousand.
    -- Two writers of different attempts share a slot one time in 256, and wait for each other.
    PERFORM pg_catalog.pg_advisory_xact_lock(
                pg_catalog.hashtext('ctxgraph.rule_attempt_stats:' || _rule_stats_apply.skill), k.slot)
       FROM (SELECT DISTINCT ((u.key % 256 + 256) % 256)::integer AS slot FROM unnest(keys) AS u (key) ORDER BY 1) AS k;

    WITH fresh AS (
        SELECT k.key AS attempt_key, a.rule_id, a.units, a.outcome_sum, a.harmful
          FROM unnest(keys) AS k (key)
         CROSS JOIN LATERAL (SELECT min(a.rule_id) AS rule_id, count(*) AS units,
                                    sum(a.outcome_sum / a.scored) AS outcome_sum, bool_or(a.harmful) AS harmful
                               FROM ctxgraph.tip_attempt_stats AS a
                              WHERE a.skill = _rule_stats_apply.skill AND a.attempt_key = k.key) AS a
         WHERE a.units > 0
    ),
    stored AS (
        SELECT r.* FROM unnest(keys) AS k (key)
         CROSS JOIN LATERAL (SELECT r.* FROM ctxgraph.rule_attempt_stats AS r
                              WHERE r.skill = _rule_stats_apply.skill AND r.attempt_key = k.key OFFSET 0) AS r
    ),
    -- An attempt left without pairs (rare: its rows deleted or moved): the first condition, which
    -- names no row of the table, decides once whether the table is read at all.
    gone AS (
        DELETE FROM ctxgraph.rule_attempt_stats AS r
         WHERE EXISTS (SELECT 1 FROM stored AS o
                        WHERE NOT EXISTS (SELECT 1 FROM fresh AS f WHERE f.attempt_key = o.attempt_key))
           AND r.skill = _rule_stats_apply.skill AND r.attempt_key = ANY (keys)
           AND NOT EXISTS (SELECT 1 FROM fresh AS f WHERE f.attempt_key = r.attempt_key)
    ),
    kept AS (
        INSERT INTO ctxgraph.rule_attempt_stats AS r (skill, attempt_key, rule_id, units, outcome_sum, harmful)
        SELECT _rule_stats_apply.skill, f.attempt_key, f.rule_id, f.units, f.outcome_sum, f.harmful FROM fresh AS f
        ON CONFLICT (skill, attempt_key) DO UPDATE
           SET (rule_id, units, outcome_sum, harmful) = (excluded.rule_id, excluded.units, excluded.outcome_sum, excluded.harmful)
    ),
    deltas AS (
        SELECT d.rule_id, sum(d.sign) AS attempts, sum(d.sign * d.outcome) AS outcome_sum,
               sum(d.sign * d.harmful::integer) AS harmful_attempts
          FROM (SELECT o.rule_id, -1 AS sign, o.outcome_sum / o.units AS outcome, o.harmful FROM stored AS o
                UNION ALL
                SELECT f.rule_id, 1, f.outcome_sum / f.units, f.harmful FROM fresh AS f) AS d
         GROUP BY d.rule_id
    )
    -- Relative updates in rule order: concurrent writers of one rule add up, and never deadlock
    -- within a statement.
    INSERT INTO ctxgraph.rule_stats AS s (skill, rule_id, attempts, outcome_sum, harmful_attempts)
    SELECT _rule_stats_apply.skill, d.rule_id, d.attempts, d.outcome_sum, d.harmful_attempts
      FROM deltas AS d
     WHERE d.attempts <> 0 OR d.outcome_sum <> 0 OR d.harmful_attempts <> 0
     ORDER BY d.rule_id
    ON CONFLICT (skill, rule_id) DO UPDATE
       SET attempts = s.attempts + excluded.attempts,
           outcome_sum = s.outcome_sum + excluded.outcome_sum,
           harmful_attempts = s.harmful_attempts + excluded.harmful_attempts;
END
$$;

COMMENT ON FUNCTION ctxgraph._rule_stats_apply(text, bigint[]) IS
    'Private: recomputes the given attempts'' rule_attempt_stats rows from their pairs and moves rule_stats by the difference.';

-- _tip_stats_lock: every given tip that still exists gets a stats row, and the tips' stats rows are
-- locked in (skill, tip) order, the lock every writer of a tip's levels holds until it commits.
-- A stats row is inserted only for a tip that has none, and that tip is read FOR KEY SHARE: a tip
-- being deleted (its stats row going with it by the cascade) is then waited for and skipped, where
-- an insert arbitrated on its stats row alone waited for the delete, inserted the row again once it
-- committed, and failed on the key into the tip that was gone (23503 on tip_stats, in a writer that
-- never named the tip). A tip that has a stats row is not locked here: its deleter holds the stats
-- row before the tip (it deletes the tip's log rows first), so the lock below waits for it in the
-- same order, and skips the row once the delete commits.
--
-- Each tip is one probe by key, in tip order (a nested loop over the sorted ids, each probe a
-- subquery of its own). As "tip_id = ANY (ids)", the generic plan made on a new skill's empty
-- levels read the skill's every stats row for each call, through the index on skill alone: with
-- no statistics "skill = $1" looks as selective as a key, and that path is one index descent where
-- the array's is ten. In one transaction that read grows with every version of every stats row the
-- transaction wrote (a per-call load of 3,000 attempts: 6 ms of each attempt's 59).
CREATE FUNCTION ctxgraph._tip_stats_lock(skill text, tip_ids bigint[])
RETURNS void
LANGUAGE plpgsql
-- As _tip_stats_apply, whatever the caller set: generic plans by key, no sequential scans.
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
BEGIN
    INSERT INTO ctxgraph.tip_stats AS s (skill, tip_id)
    SELECT _tip_stats_lock.skill, t.id
      FROM (SELECT DISTINCT u.id FROM unnest(_tip_stats_lock.tip_ids) AS u (id) WHERE u.id IS NOT NULL ORDER BY u.id)
           AS u
     CROSS JOIN LATERAL (SELECT t.id FROM ctxgraph.tips AS t
                          WHERE t.skill = _tip_stats_lock.skill AND t.id = u.id
                            AND NOT EXISTS (SELECT 1 FROM ctxgraph.tip_stats AS e
                                             WHERE e.skill = _tip_stats_lock.skill AND e.tip_id = u.id OFFSET 0)
                            FOR KEY SHARE OF t) AS t
    ON CONFLICT (skill, tip_id) DO NOTHING;
    PERFORM 1
       FROM (SELECT DISTINCT u.id FROM unnest(_tip_stats_lock.tip_ids) AS u (id) WHERE u.id IS NOT NULL ORDER BY u.id)
            AS u
      CROSS JOIN LATERAL (SELECT 1 FROM ctxgraph.tip_stats AS s
                           WHERE s.skill = _tip_stats_lock.skill AND s.tip_id = u.id
                             FOR UPDATE OF s) AS s;
END
$$;

COMMENT ON FUNCTION ctxgraph._tip_stats_lock(text, bigint[]) IS
    'Private: gives every given tip that exists a stats row and locks the tips'' stats rows in (skill, tip) order; a tip deleted meanwhile is waited for and skipped.';

-- _tip_stats_apply: the one place a change reaches the aggregates. Each element names a tip, the
-- attempt_key of a changed row (NULL for a row without an outcome: it is in no pair, and logging
-- or linking such rows, most of the write path, touches no pair, attempt or rule), the row's sign in the retrieval count (+1 added, -1 removed, 0
-- neither), its retrieved_at, and whether it may have been the tip's latest retrieval and is
-- gone (then the latest is read again from the log; an index scan of that tip's rows, which only a
-- DELETE or a change of retrieved_at or tip_id can need).
CREATE FUNCTION ctxgraph._tip_stats_apply(skill text, tip_ids bigint[], attempt_keys bigint[], signs integer[],
                                          retrieved_ats timestamptz[], removals boolean[])
RETURNS integer
LANGUAGE plpgsql
-- Generic plans, always: every lookup is by key (= ANY of the arrays), which a generic plan serves
-- as well whatever the batch's size, and planning these statements afresh cost more than running
-- them (record_outcome 5.8 ms with the plan cache's choice, 4.4 ms forced generic; the plan cache
-- also plans the first five calls of every session afresh).
-- No sequential scans: a session keeps its generic plan until the tables it reads are analysed
-- again, and a plan made while a level was empty (a new skill, a fresh load) probes each key by
-- scanning that level, which costs nothing then and the level's size per key once it fills (in
-- a session that planned on a new skill's empty levels, 24,665 rows took 11.3 s against 2.0 s now).
-- Pricing out sequential scans is not enough: every index leads with skill, and with no statistics
-- "skill = $1" looks as selective as a key, so a lookup of "key = ANY (array)" (ten index descents
-- to the planner) lost to one descent on skill alone with the key as a filter, which reads the
-- skill's whole partition. Planned on a fresh database, that read everything the session had
-- written so far on every call (a per-call load of 3,000 attempts: 4.3 ms per attempt at 250, 59
-- ms at 3,000). So the levels are read one key at a time (LATERAL subqueries, OFFSET 0 where the
-- planner would flatten them) and their rows are moved by upserts, whose conflict check finds each
-- row through the primary key whatever the plan. A level with one index then leaves the planner
-- nothing else to pick; the pairs, read by attempt, take the attempt index once the lookup is an
-- equality (tests/pgtap/31-per-call-levels.sql plans on empty levels). The log and the attempts,
-- read through scored_retrievals, have several indexes led by skill, and no way of writing the
-- lookup keeps a plan made on an empty log off the wrong one: a session that writes a long load
-- plans again as the load grows (the per-call loader does).
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    moved        integer;
    rule_keys    bigint[];
    pair_keys    bigint[];  -- the touched pairs' attempt keys
    linked_keys  bigint[];  -- those that are attempts
    unlinked_ids bigint[];  -- the touched rows without an attempt (attempt_key = -id)
BEGIN
    -- 1. Every touched tip that still exists has a stats row; lock them in a fixed order.
    PERFORM ctxgraph._tip_stats_lock(_tip_stats_apply.skill, _tip_stats_apply.tip_ids);

    -- 2a. Rows without an outcome only (logging, linking): no pair, attempt or rule can move;
    --     the retrieval count and the latest retrieval are all there is to keep. Each tip's stats
    --     row is read by key (a tip without one is gone, and left out) and moved by an upsert that
    --     always finds it (see above).
    IF array_remove(_tip_stats_apply.attempt_keys, NULL) = '{}' THEN
        INSERT INTO ctxgraph.tip_stats AS s (skill, tip_id, retrievals, last_retrieved_at)
        SELECT _tip_stats_apply.skill, r.tip_id, r.retrievals,
               CASE WHEN r.latest_removed >= o.last_retrieved_at
                        THEN (SELECT max(l.retrieved_at) FROM ctxgraph.tip_retrievals AS l
                               WHERE l.skill = _tip_stats_apply.skill AND l.tip_id = r.tip_id)
                    ELSE greatest(o.last_retrieved_at, r.latest_added)
               END
          FROM (SELECT c.tip_id, sum(c.sign) AS retrievals,
                       max(c.retrieved_at) FILTER (WHERE c.sign > 0) AS latest_added,
                       max(c.retrieved_at) FILTER (WHERE c.removal) AS latest_removed
                  FROM unnest(_tip_stats_apply.tip_ids, _tip_stats_apply.signs, _tip_stats_apply.retrieved_ats,
                              _tip_stats_apply.removals) AS c (tip_id, sign, retrieved_at, removal)
                 GROUP BY c.tip_id) AS r
         CROSS JOIN LATERAL (SELECT o.last_retrieved_at FROM ctxgraph.tip_stats AS o
                              WHERE o.skill = _tip_stats_apply.skill AND o.tip_id = r.tip_id OFFSET 0) AS o
        ON CONFLICT (skill, tip_id) DO UPDATE
           SET retrievals = s.retrievals + excluded.retrievals,
               evidence_version = s.evidence_version + 1,
               last_retrieved_at = excluded.last_retrieved_at,
               refreshed_at = now();
        GET DIAGNOSTICS moved = ROW_COUNT;
        RETURN moved;
    END IF;

    pair_keys := ARRAY(SELECT DISTINCT u.key FROM unnest(_tip_stats_apply.attempt_keys) AS u (key) WHERE u.key IS NOT NULL);
    linked_keys := ARRAY(SELECT k.key FROM unnest(pair_keys) AS k (key) WHERE k.key > 0);
    unlinked_ids := ARRAY(SELECT -k.key FROM unnest(pair_keys) AS k (key) WHERE k.key < 0);

    -- 2. In a fresh statement: each touched pair's figures now, against the stored ones; the pair
    --    rows replaced; the (tip, rule) and (tip, run) rows and each tip moved by the difference.
    --    All parts read the same snapshot, so "stored" is every table before this statement's
    --    own writes; the rows they replace are written only under the tip locks held here.
    WITH changes AS (
        SELECT c.tip_id, c.attempt_key, c.sign, c.retrieved_at, c.removal
          FROM unnest(_tip_stats_apply.tip_ids, _tip_stats_apply.attempt_keys, _tip_stats_apply.signs,
                      _tip_stats_apply.retrieved_ats, _tip_stats_apply.removals)
               AS c (tip_id, attempt_key, sign, retrieved_at, removal)
    ),
    pairs AS (
        SELECT DISTINCT c.tip_id, c.attempt_key FROM changes AS c WHERE c.attempt_key IS NOT NULL
    ),
    -- Each touched pair's figures as _tip_pair_aggregate defines them (fresh) beside its stored row
    -- (o_*), for all pairs at once: the touched attempts' rows are read once each by
    -- (skill, attempt_id) (the unlinked rows by primary key), their stored pairs once each by
    -- (skill, attempt_key), and both are grouped with the pairs themselves, so a pair with no row
    -- left gets scored 0 and a pair never stored gets no o_* figures. One grouping of a union, not
    -- joins of the pairs to the rows and to the stored pairs: a generic plan guessing a few rows on
    -- each side would run those joins as nested loops. Pair by pair, an attempt of five tips was
    -- read five times (250,000 rows, each with its attempt's harm looked up, for a 50,000-row bulk
    -- load), and a bulk load's new pairs were each probed for a stored row that cannot be there
    -- (50,000 probes; an attempt's stored pairs are one probe of the attempt index).
    -- Whether a pair's tip still exists comes from the same grouping: the touched tips that exist
    -- are a part of the union, and a window over the groups gives each pair its tip's answer. As
    -- a subquery per pair, the generic plan hashed the skill's every tip instead (for an attempt's
    -- five pairs at 10M rows, 10,000 tips read: 3.7 ms of record_outcome's 4.9 ms statement). The
    -- tips are probed by primary key, one distinct tip at a time (LATERAL ... OFFSET 0, as below):
    -- as one scan for all of them, a plan made on a small skill's statistics read every tip of the
    -- skill through the rule index.
    grouped AS (
        SELECT g.*
          FROM (SELECT x.tip_id, x.attempt_key, min(x.rule_id) AS rule_id, min(x.run_id) AS run_id,
                       count(x.retrieval_id) AS scored, coalesce(sum(x.credit), 0) AS outcome_sum,
                       coalesce(sum(x.credit * x.follow_weight), 0) AS weighted_sum,
                       coalesce(sum(x.follow_weight), 0) AS weight_sum, count(x.followed) AS follow_known,
                       count(*) FILTER (WHERE x.followed) AS followed,
                       count(*) FILTER (WHERE x.followed AND x.harmful) AS harm,
                       coalesce(bool_or(x.harmful), false) AS harmful, max(x.retrieved_at) AS retrieved_max,
                       bool_or(x.touched) AS touched, bool_or(x.stored) AS stored,
                       -- the stored row's figures: a pair has at most one, which max() passes on as it is
                       min(x.o_rule_id) AS o_rule_id, min(x.o_run_id) AS o_run_id, max(x.o_scored) AS o_scored,
                       max(x.o_outcome_sum) AS o_outcome_sum, max(x.o_weighted_sum) AS o_weighted_sum,
                       max(x.o_weight_sum) AS o_weight_sum, max(x.o_follow_known) AS o_follow_known,
                       max(x.o_followed) AS o_followed, max(x.o_harm) AS o_harm, bool_or(x.o_harmful) AS o_harmful,
                       bool_or(bool_or(x.live)) OVER (PARTITION BY x.tip_id) AS tip_exists
                  FROM (SELECT p.tip_id, p.attempt_key, true, false, NULL::bigint, NULL::text, NULL::text,
                               NULL::double precision, NULL::double precision, NULL::boolean, NULL::boolean,
                               NULL::timestamptz, NULL::text, NULL::text, NULL::bigint, NULL::double precision,
                               NULL::double precision, NULL::double precision, NULL::bigint, NULL::bigint,
                               NULL::bigint, NULL::boolean, false
                          FROM pairs AS p
                        UNION ALL
                        SELECT s.tip_id, s.attempt_key, false, false, s.retrieval_id, s.rule_id, s.run_id, s.credit,
                               s.follow_weight, s.followed, s.harmful, s.retrieved_at, NULL, NULL, NULL, NULL, NULL,
                               NULL, NULL, NULL, NULL, NULL, false
                          FROM ctxgraph.scored_retrievals AS s
                         WHERE s.skill = _tip_stats_apply.skill AND s.attempt_id = ANY (linked_keys)
                        UNION ALL
                        SELECT s.tip_id, s.attempt_key, false, false, s.retrieval_id, s.rule_id, s.run_id, s.credit,
                               s.follow_weight, s.followed, s.harmful, s.retrieved_at, NULL, NULL, NULL, NULL, NULL,
                               NULL, NULL, NULL, NULL, NULL, false
                          FROM ctxgraph.scored_retrievals AS s
                         -- Read only when there are such rows: planned as a scan of the index
                         -- range of rows without an attempt, every call read every row not yet
                         -- linked and every version of a row from before its link that the index
                         -- still held (in one transaction, all of them).
                         WHERE cardinality(unlinked_ids) > 0
                           AND s.skill = _tip_stats_apply.skill AND s.retrieval_id = ANY (unlinked_ids)
                           AND s.attempt_id IS NULL
                        UNION ALL
                        SELECT a.tip_id, a.attempt_key, false, true, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                               a.rule_id, a.run_id, a.scored, a.outcome_sum, a.weighted_sum, a.weight_sum,
                               a.follow_known, a.followed, a.harm, a.harmful, false
                          FROM unnest(pair_keys) AS k (key)
                         CROSS JOIN LATERAL (SELECT a.* FROM ctxgraph.tip_attempt_stats AS a
                                              WHERE a.skill = _tip_stats_apply.skill AND a.attempt_key = k.key
                                             OFFSET 0) AS a
                        UNION ALL
                        SELECT t.id, NULL, false, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                               NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, true
                          FROM (SELECT DISTINCT u.id FROM unnest(_tip_stats_apply.tip_ids) AS u (id)) AS u
                          JOIN LATERAL (SELECT t.id FROM ctxgraph.tips AS t
                                         WHERE t.skill = _tip_stats_apply.skill AND t.id = u.id OFFSET 0) AS t ON true)
                       AS x (tip_id, attempt_key, touched, stored, retrieval_id, rule_id, run_id, credit, follow_weight,
                             followed, harmful, retrieved_at, o_rule_id, o_run_id, o_scored, o_outcome_sum,
                             o_weighted_sum, o_weight_sum, o_follow_known, o_followed, o_harm, o_harmful, live)
                 GROUP BY x.tip_id, x.attempt_key) AS g
         WHERE g.touched
    ),
    -- The touched pairs of tips that exist, as they are now (scored 0: no row left), and whether
    -- each is stored.
    fresh AS (
        SELECT g.tip_id, g.attempt_key, g.rule_id, g.run_id, g.scored, g.outcome_sum, g.weighted_sum, g.weight_sum,
               g.follow_known, g.followed, g.harm, g.harmful, g.retrieved_max, g.stored
          FROM grouped AS g
         WHERE g.tip_exists
    ),
    gone AS (
        DELETE FROM ctxgraph.tip_attempt_stats AS a
         USING fresh AS f
         WHERE a.skill = _tip_stats_apply.skill AND a.tip_id = f.tip_id AND a.attempt_key = f.attempt_key
           AND f.scored = 0
    ),
    -- The pairs that stay: a stored one replaced, a new one inserted. Which is which is known (a
    -- pair is written only under its tip's lock, held here): a stored pair goes through an upsert
    -- that always finds it by primary key, and a new one is inserted without the arbiter probe
    -- and speculative insertion of an upsert (a bulk load's pairs are all new).
    kept AS (
        INSERT INTO ctxgraph.tip_attempt_stats AS a (skill, tip_id, attempt_key, rule_id, run_id, scored, outcome_sum,
                                                     weighted_sum, weight_sum, follow_known, followed, harm, harmful,
                                                     retrieved_max)
        SELECT _tip_stats_apply.skill, f.tip_id, f.attempt_key, f.rule_id, f.run_id, f.scored, f.outcome_sum,
               f.weighted_sum, f.weight_sum, f.follow_known, f.followed, f.harm, f.harmful, f.retrieved_max
          FROM fresh AS f
         WHERE f.stored AND f.scored > 0
        ON CONFLICT (skill, tip_id, attempt_key) DO UPDATE
           SET (rule_id, run_id, scored, outcome_sum, weighted_sum, weight_sum, follow_known, followed, harm, harmful,
                retrieved_max)
             = (excluded.rule_id, excluded.run_id, excluded.scored, excluded.outcome_sum, excluded.weighted_sum,
                excluded.weight_sum, excluded.follow_known, excluded.followed, excluded.harm, excluded.harmful,
                excluded.retrieved_max)
    ),
    added AS (
        INSERT INTO ctxgraph.tip_attempt_stats (skill, tip_id, attempt_key, rule_id, run_id, scored, outcome_sum,
                                                weighted_sum, weight_sum, follow_known, followed, harm, harmful,
                                                retrieved_max)
        SELECT _tip_stats_apply.skill, f.tip_id, f.attempt_key, f.rule_id, f.run_id, f.scored, f.outcome_sum,
               f.weighted_sum, f.weight_sum, f.follow_known, f.followed, f.harm, f.harmful, f.retrieved_max
          FROM fresh AS f
         WHERE NOT f.stored AND f.scored > 0
    ),
    -- Each changed pair as eviction's unit: its stored side (the o_* figures) leaves (-1), its
    -- fresh side enters (+1).
    units AS (
        SELECT g.tip_id, g.o_rule_id AS rule_id, g.o_run_id AS run_id, -1 AS sign, g.o_weight_sum / g.o_scored AS w,
               g.o_outcome_sum / g.o_scored AS y, g.o_harmful AS harmful
          FROM grouped AS g
         WHERE g.stored
        UNION ALL
        SELECT f.tip_id, f.rule_id, f.run_id, 1, f.weight_sum / f.scored, f.outcome_sum / f.scored, f.harmful
          FROM fresh AS f
         WHERE f.scored > 0
    ),
    -- The (tip, rule) and (tip, run) rows below are each looked up by primary key, one probe per
    -- key (LATERAL ... OFFSET 0 keeps the subquery from being flattened into a join). The plan is
    -- generic: as a join, with the partitioned parents unanalysed (what autovacuum leaves), it
    -- estimated hundreds of rows for an attempt's five pairs and hashed the skill's whole
    -- tip_rule_stats (39,319 rows at 1M retrievals, 8 ms of a 12 ms record_outcome) instead of
    -- probing it five times; probes cost what the change touches, whatever the tables hold.
    rule_state AS (
        SELECT d.tip_id, d.rule_id, coalesce(s.units, 0) AS before_units, coalesce(s.units, 0) + d.units AS units,
               coalesce(s.followed_n, 0) + d.followed_n AS followed_n,
               coalesce(s.followed_sum, 0) + d.followed_sum AS followed_sum,
               coalesce(s.harm_n, 0) + d.harm_n AS harm_n
          FROM (SELECT u.tip_id, u.rule_id, sum(u.sign) AS units, sum(u.sign * u.w) AS followed_n,
                       sum(u.sign * u.w * u.y) AS followed_sum, sum(u.sign * u.w * u.harmful::integer) AS harm_n
                  FROM units AS u GROUP BY u.tip_id, u.rule_id) AS d
          LEFT JOIN LATERAL (SELECT s.units, s.followed_n, s.followed_sum, s.harm_n FROM ctxgraph.tip_rule_stats AS s
                              WHERE s.skill = _tip_stats_apply.skill AND s.tip_id = d.tip_id AND s.rule_id = d.rule_id
                             OFFSET 0) AS s ON true
    ),
    rule_gone AS (
        DELETE FROM ctxgraph.tip_rule_stats AS s
         USING rule_state AS r
         WHERE s.skill = _tip_stats_apply.skill AND s.tip_id = r.tip_id AND s.rule_id = r.rule_id AND r.units = 0
    ),
    -- As the pairs: a (tip, rule) or (tip, run) row held before (before_units > 0) is replaced by an
    -- upsert that always finds it, a new one inserted; both are written only under the tip's lock.
    rule_kept AS (
        INSERT INTO ctxgraph.tip_rule_stats AS s (skill, tip_id, rule_id, units, followed_n, followed_sum, harm_n)
        SELECT _tip_stats_apply.skill, r.tip_id, r.rule_id, r.units, r.followed_n, r.followed_sum, r.harm_n
          FROM rule_state AS r
         WHERE r.before_units > 0 AND r.units > 0
        ON CONFLICT (skill, tip_id, rule_id) DO UPDATE
           SET (units, followed_n, followed_sum, harm_n)
             = (excluded.units, excluded.followed_n, excluded.followed_sum, excluded.harm_n)
    ),
    rule_added AS (
        INSERT INTO ctxgraph.tip_rule_stats (skill, tip_id, rule_id, units, followed_n, followed_sum, harm_n)
        SELECT _tip_stats_apply.skill, r.tip_id, r.rule_id, r.units, r.followed_n, r.followed_sum, r.harm_n
          FROM rule_state AS r
         WHERE r.before_units = 0 AND r.units > 0
    ),
    run_state AS (
        SELECT d.tip_id, d.run_id, coalesce(s.units, 0) AS before_units, coalesce(s.units, 0) + d.units AS units
          FROM (SELECT u.tip_id, u.run_id, sum(u.sign) AS units FROM units AS u
                 GROUP BY u.tip_id, u.run_id HAVING sum(u.sign) <> 0) AS d
          LEFT JOIN LATERAL (SELECT s.units FROM ctxgraph.tip_run_stats AS s
                              WHERE s.skill = _tip_stats_apply.skill AND s.tip_id = d.tip_id AND s.run_id = d.run_id
                             OFFSET 0) AS s ON true
    ),
    run_gone AS (
        DELETE FROM ctxgraph.tip_run_stats AS s
         USING run_state AS r
         WHERE s.skill = _tip_stats_apply.skill AND s.tip_id = r.tip_id AND s.run_id = r.run_id AND r.units = 0
    ),
    run_kept AS (
        INSERT INTO ctxgraph.tip_run_stats AS s (skill, tip_id, run_id, units)
        SELECT _tip_stats_apply.skill, r.tip_id, r.run_id, r.units FROM run_state AS r
         WHERE r.before_units > 0 AND r.units > 0
        ON CONFLICT (skill, tip_id, run_id) DO UPDATE SET units = excluded.units
    ),
    run_added AS (
        INSERT INTO ctxgraph.tip_run_stats (skill, tip_id, run_id, units)
        SELECT _tip_stats_apply.skill, r.tip_id, r.run_id, r.units FROM run_state AS r
         WHERE r.before_units = 0 AND r.units > 0
    ),
    runs_delta AS (
        SELECT r.tip_id, sum((r.units > 0)::integer - (r.before_units > 0)::integer) AS runs
          FROM run_state AS r GROUP BY r.tip_id
    ),
    pair_delta AS (
        SELECT g.tip_id,
               sum((g.scored > 0)::integer - g.stored::integer) AS attempts,
               sum(g.scored - coalesce(g.o_scored, 0)) AS scored,
               sum(g.outcome_sum - coalesce(g.o_outcome_sum, 0)) AS outcome_sum,
               sum(g.weighted_sum - coalesce(g.o_weighted_sum, 0)) AS weighted_sum,
               sum(g.follow_known - coalesce(g.o_follow_known, 0)) AS follow_known,
               sum(g.followed - coalesce(g.o_followed, 0)) AS followed,
               sum(g.harm - coalesce(g.o_harm, 0)) AS harm
          FROM grouped AS g
         WHERE g.tip_exists
         GROUP BY g.tip_id
    ),
    row_delta AS (
        SELECT c.tip_id, sum(c.sign) AS retrievals,
               max(c.retrieved_at) FILTER (WHERE c.sign > 0) AS latest_added,
               max(c.retrieved_at) FILTER (WHERE c.removal) AS latest_removed
          FROM changes AS c
         GROUP BY c.tip_id
    ),
    -- The attempts whose rule-level figures may move: a pair that appeared, went, or changed its
    -- rule, outcome or harm. A scorer write-back changes follow figures only and moves none.
    rule_moved AS (
        SELECT DISTINCT g.attempt_key
          FROM grouped AS g
         WHERE NOT g.tip_exists OR NOT g.stored OR g.scored = 0
            OR (g.rule_id, g.outcome_sum / g.scored, g.harmful)
               IS DISTINCT FROM (g.o_rule_id, g.o_outcome_sum / g.o_scored, g.o_harmful)
    ),
    -- Per tip, its rows', pairs' and runs' changes side by side: one grouping of their union, not
    -- joins of one to the other, which a plan guessing too few rows runs as nested loops (quadratic
    -- in the tips of a bulk load). The pairs' and runs' tips are among the rows' tips.
    tip_delta AS (
        SELECT x.tip_id, sum(x.retrievals) AS retrievals, max(x.latest_added) AS latest_added,
               max(x.latest_removed) AS latest_removed, sum(x.attempts) AS attempts, sum(x.scored) AS scored,
               sum(x.outcome_sum) AS outcome_sum, sum(x.weighted_sum) AS weighted_sum,
               sum(x.follow_known) AS follow_known, sum(x.followed) AS followed, sum(x.harm) AS harm,
               sum(x.runs) AS runs
          FROM (SELECT r.tip_id, r.retrievals, r.latest_added, r.latest_removed, 0, 0, 0, 0, 0, 0, 0, 0
                  FROM row_delta AS r
                UNION ALL
                SELECT d.tip_id, 0, NULL, NULL, d.attempts, d.scored, d.outcome_sum, d.weighted_sum, d.follow_known,
                       d.followed, d.harm, 0
                  FROM pair_delta AS d
                UNION ALL
                SELECT rd.tip_id, 0, NULL, NULL, 0, 0, 0, 0, 0, 0, 0, rd.runs
                  FROM runs_delta AS rd)
               AS x (tip_id, retrievals, latest_added, latest_removed, attempts, scored, outcome_sum, weighted_sum,
                     follow_known, followed, harm, runs)
         GROUP BY x.tip_id
    ),
    -- Each tip's stats row read by key (a tip without one is gone, and left out) and moved by an
    -- upsert that always finds it. As an UPDATE joined to tip_delta, the plan hashed the skill's
    -- every stats row, and every version of them the transaction had written, for each call.
    tips_moved AS (
        INSERT INTO ctxgraph.tip_stats AS s (skill, tip_id, retrievals, attempts, scored, outcome_sum, weighted_sum,
                                             follow_known, followed, harm, runs, last_retrieved_at)
        SELECT _tip_stats_apply.skill, r.tip_id, r.retrievals, r.attempts, r.scored, r.outcome_sum, r.weighted_sum,
               r.follow_known, r.followed, r.harm, r.runs,
               CASE WHEN r.latest_removed >= o.last_retrieved_at
                        THEN (SELECT max(l.retrieved_at) FROM ctxgraph.tip_retrievals AS l
                               WHERE l.skill = _tip_stats_apply.skill AND l.tip_id = r.tip_id)
                    ELSE greatest(o.last_retrieved_at, r.latest_added)
               END
          FROM tip_delta AS r
         CROSS JOIN LATERAL (SELECT o.last_retrieved_at FROM ctxgraph.tip_stats AS o
                              WHERE o.skill = _tip_stats_apply.skill AND o.tip_id = r.tip_id OFFSET 0) AS o
        ON CONFLICT (skill, tip_id) DO UPDATE
           SET retrievals = s.retrievals + excluded.retrievals,
               attempts = s.attempts + excluded.attempts,
               scored = s.scored + excluded.scored,
               outcome_sum = s.outcome_sum + excluded.outcome_sum,
               weighted_sum = s.weighted_sum + excluded.weighted_sum,
               follow_known = s.follow_known + excluded.follow_known,
               followed = s.followed + excluded.followed,
               harm = s.harm + excluded.harm,
               runs = s.runs + excluded.runs,
               evidence_version = s.evidence_version + 1,
               last_retrieved_at = excluded.last_retrieved_at,
               refreshed_at = now()
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM tips_moved), ARRAY(SELECT m.attempt_key FROM rule_moved AS m)
      INTO moved, rule_keys;

    -- 3. The attempts whose rule-level figures may have moved: their rows and their rules' sums.
    IF rule_keys <> '{}' THEN
        PERFORM ctxgraph._rule_stats_apply(_tip_stats_apply.skill, rule_keys);
    END IF;
    RETURN moved;
END
$$;

COMMENT ON FUNCTION ctxgraph._tip_stats_apply(text, bigint[], bigint[], integer[], timestamptz[], boolean[]) IS
    'Private: moves every maintained level (pairs, tips, tip-rule and tip-run rows, attempts, rules) by the changed rows of one statement (the triggers call it).';

-- _tip_stats_follow_apply: the scorer's write-back, moved by difference. A statement that changes
-- only the follow columns of scored rows (verdict, cosine, probability) moves nothing but follow
-- figures: no pair appears or goes, no rule, run or attempt figure changes, and each row's credit
-- and harm are those of its pair. A pair of one row (nearly every pair: a tip is retrieved once per
-- attempt) then moves by that row's change in follow weight and verdict, computed from the row's
-- old and new values with the follow rule itself (follow_decision, follow_verdict and the
-- follow.weight.<branch> coefficients, as scored_retrievals applies them), so the pair is neither
-- recomputed from the log nor probed before it is written: the write-back's pairs, (tip, rule)
-- rows and tips are each one relative UPDATE by primary key. A pair of several rows, whose rows
-- may differ in credit, is recomputed through _tip_stats_apply as before.
CREATE FUNCTION ctxgraph._tip_stats_follow_apply(skill text, tip_ids bigint[], attempt_keys bigint[],
                                                 old_llm boolean[], old_emb double precision[],
                                                 old_probability double precision[], new_llm boolean[],
                                                 new_emb double precision[], new_probability double precision[])
RETURNS integer
LANGUAGE plpgsql
-- Generic plans, no JIT and no sequential scans, as _tip_stats_apply: every lookup is by key.
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    moved     integer;
    left_tips bigint[];
    left_keys bigint[];
BEGIN
    -- The tips' rows first, in (skill, tip) order, as every writer of their levels takes them.
    PERFORM 1 FROM ctxgraph.tip_stats AS s
     WHERE s.skill = _tip_stats_follow_apply.skill AND s.tip_id = ANY (_tip_stats_follow_apply.tip_ids)
     ORDER BY s.tip_id
       FOR UPDATE;

    -- The thresholds read once (MATERIALIZED): inlined, the CTE put ctxgraph.param() (plpgsql,
    -- STABLE) into every row's follow_decision arguments, which both called it per row and kept
    -- the planner from inlining follow_decision (IMMUTABLE) itself.
    WITH thresholds AS MATERIALIZED (
        SELECT ctxgraph.param('follow.emb_threshold') AS emb, ctxgraph.param('follow.probability_threshold') AS probability
    ),
    changes AS (
        SELECT c.tip_id, c.attempt_key,
               ctxgraph.follow_decision(c.old_llm, c.old_emb, c.old_probability, t.emb, t.probability) AS old_decision,
               ctxgraph.follow_decision(c.new_llm, c.new_emb, c.new_probability, t.emb, t.probability) AS new_decision
          FROM unnest(_tip_stats_follow_apply.tip_ids, _tip_stats_follow_apply.attempt_keys,
                      _tip_stats_follow_apply.old_llm, _tip_stats_follow_apply.old_emb,
                      _tip_stats_follow_apply.old_probability, _tip_stats_follow_apply.new_llm,
                      _tip_stats_follow_apply.new_emb, _tip_stats_follow_apply.new_probability)
               AS c (tip_id, attempt_key, old_llm, old_emb, old_probability, new_llm, new_emb, new_probability)
         CROSS JOIN thresholds AS t
    ),
    -- Each branch's coefficient read once (ctxgraph.param raises on a missing one).
    weights AS (
        SELECT d.decision, ctxgraph.param('follow.weight.' || d.decision) AS weight
          FROM (SELECT c.old_decision FROM changes AS c UNION SELECT c.new_decision FROM changes AS c) AS d (decision)
    ),
    -- Per pair, the change of its follow sums; a row whose branch did not change moves nothing.
    deltas AS (
        SELECT c.tip_id, c.attempt_key, sum(wn.weight - wo.weight) AS weight,
               sum((ctxgraph.follow_verdict(c.new_decision) IS NOT NULL)::integer
                   - (ctxgraph.follow_verdict(c.old_decision) IS NOT NULL)::integer) AS known,
               sum(coalesce(ctxgraph.follow_verdict(c.new_decision), false)::integer
                   - coalesce(ctxgraph.follow_verdict(c.old_decision), false)::integer) AS followed
          FROM changes AS c
          JOIN weights AS wo ON wo.decision = c.old_decision
          JOIN weights AS wn ON wn.decision = c.new_decision
         WHERE c.old_decision <> c.new_decision
         GROUP BY c.tip_id, c.attempt_key
    ),
    -- One-row pairs: the row's credit is the pair's outcome_sum, its harm the pair's harmful.
    pairs_moved AS (
        UPDATE ctxgraph.tip_attempt_stats AS a
           SET weight_sum = a.weight_sum + d.weight,
               weighted_sum = a.weighted_sum + a.outcome_sum * d.weight,
               follow_known = a.follow_known + d.known,
               followed = a.followed + d.followed,
               harm = a.harm + CASE WHEN a.harmful THEN d.followed ELSE 0 END
          FROM deltas AS d
         WHERE a.skill = _tip_stats_follow_apply.skill AND a.tip_id = d.tip_id AND a.attempt_key = d.attempt_key
           AND a.scored = 1
        RETURNING a.tip_id, a.attempt_key, a.rule_id, a.outcome_sum, a.harmful, d.weight, d.known, d.followed
    ),
    -- Eviction's unit is the pair's mean follow weight and mean credit: with one row, the row's.
    rules_moved AS (
        UPDATE ctxgraph.tip_rule_stats AS s
           SET followed_n = s.followed_n + m.weight,
               followed_sum = s.followed_sum + m.weighted,
               harm_n = s.harm_n + m.harm
          FROM (SELECT p.tip_id, p.rule_id, sum(p.weight) AS weight, sum(p.weight * p.outcome_sum) AS weighted,
                       coalesce(sum(p.weight) FILTER (WHERE p.harmful), 0) AS harm
                  FROM pairs_moved AS p GROUP BY p.tip_id, p.rule_id) AS m
         WHERE s.skill = _tip_stats_follow_apply.skill AND s.tip_id = m.tip_id AND s.rule_id = m.rule_id
    ),
    -- Every tip whose rows changed gets a new evidence version, whether its figures moved or not:
    -- each enters with zeros beside its moved pairs, and one grouping adds them up. (Not a join of
    -- the tips to their moved pairs: planned for the 10 rows a generic plan guesses, that join was
    -- a nested loop over both, 3.6M comparisons and 300 ms for 2,682 tips.)
    tip_deltas AS (
        SELECT x.tip_id, sum(x.weighted) AS weighted, sum(x.known) AS known, sum(x.followed) AS followed,
               sum(x.harm) AS harm
          FROM (SELECT p.tip_id, p.outcome_sum * p.weight, p.known, p.followed,
                       CASE WHEN p.harmful THEN p.followed ELSE 0 END
                  FROM pairs_moved AS p
                UNION ALL
                SELECT u.tip_id, 0, 0, 0, 0 FROM unnest(_tip_stats_follow_apply.tip_ids) AS u (tip_id))
               AS x (tip_id, weighted, known, followed, harm)
         GROUP BY x.tip_id
    ),
    tips_moved AS (
        UPDATE ctxgraph.tip_stats AS s
           SET weighted_sum = s.weighted_sum + d.weighted,
               follow_known = s.follow_known + d.known,
               followed = s.followed + d.followed,
               harm = s.harm + d.harm,
               evidence_version = s.evidence_version + 1,
               refreshed_at = now()
          FROM tip_deltas AS d
         WHERE s.skill = _tip_stats_follow_apply.skill AND s.tip_id = d.tip_id
        RETURNING 1
    ),
    -- Pairs of several rows (or, defensively, a pair not stored): recomputed below.
    left_over AS (
        SELECT d.tip_id, d.attempt_key FROM deltas AS d
         WHERE NOT EXISTS (SELECT 1 FROM pairs_moved AS p WHERE p.tip_id = d.tip_id AND p.attempt_key = d.attempt_key)
    )
    SELECT (SELECT count(*) FROM tips_moved),
           (SELECT array_agg(l.tip_id ORDER BY l.tip_id, l.attempt_key) FROM left_over AS l),
           (SELECT array_agg(l.attempt_key ORDER BY l.tip_id, l.attempt_key) FROM left_over AS l)
      INTO moved, left_tips, left_keys;
    IF left_tips IS NOT NULL THEN
        PERFORM ctxgraph._tip_stats_apply(_tip_stats_follow_apply.skill, left_tips, left_keys,
                                          array_fill(0, ARRAY[cardinality(left_tips)]),
                                          array_fill(NULL::timestamptz, ARRAY[cardinality(left_tips)]),
                                          array_fill(false, ARRAY[cardinality(left_tips)]));
    END IF;
    RETURN moved;
END
$$;

COMMENT ON FUNCTION ctxgraph._tip_stats_follow_apply(text, bigint[], bigint[], boolean[], double precision[], double precision[], boolean[], double precision[], double precision[]) IS
    'Private: moves the pairs, (tip, rule) rows and tips by a statement''s changes of follow columns only (the scorer''s write-back), from each row''s old and new follow branch; pairs of several rows go through _tip_stats_apply.';

-- _tip_stats_rebuild: one skill's levels rebuilt exactly from the log, for the given tips (NULL:
-- every tip of the skill, and then the attempt and rule levels from scratch too).
--
-- The statements that read "these tips or all" are planned for the call at hand (EXECUTE with the
-- tips as a parameter, the filter left out for all): a plan for both cases would scan the log for
-- a handful of tips. Not by forcing custom plans on the function: that setting holds for the
-- foreign key checks of every row written inside it too, and replanned each of them (the full
-- rebuild of a 49,480-row log took 15.6 s that way, 6.6 s this way).
CREATE FUNCTION ctxgraph._tip_stats_rebuild(skill text, tip_ids bigint[])
RETURNS integer
LANGUAGE plpgsql
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    refreshed integer;
    old_keys  bigint[];
    -- The filter on a tip column: nothing for every tip, else membership in $2.
    only_tips CONSTANT text := CASE WHEN _tip_stats_rebuild.tip_ids IS NULL THEN '' ELSE ' AND %s = ANY ($2)' END;
BEGIN
    -- 0. A whole skill: no tip is created until the rebuild commits. The locks below hold off the
    --    writers of every tip that exists, but a tip created meanwhile has no stats row to wait on:
    --    its first graded attempt, committed between this rebuild's emptying of a level and its
    --    refill, was kept by the one and inserted again by the other (23505). Updates of the tips
    --    wait too (evict_tips, embeddings); the write path only reads them, and goes on.
    IF _tip_stats_rebuild.tip_ids IS NULL THEN
        EXECUTE format('LOCK TABLE %I.tips IN SHARE MODE', _tip_stats_rebuild.skill);
    END IF;
    -- 1. Make sure every tip has a stats row and lock those rows in a fixed order, as every writer
    --    does (for a whole skill, its every tip: none can appear now).
    PERFORM ctxgraph._tip_stats_lock(_tip_stats_rebuild.skill,
                                     coalesce(_tip_stats_rebuild.tip_ids,
                                              ARRAY(SELECT t.id FROM ctxgraph.tips AS t
                                                     WHERE t.skill = _tip_stats_rebuild.skill)));

    -- 2. The tips' pairs, and their (tip, rule) and (tip, run) rows, rebuilt from scored_retrievals
    --    (a fresh snapshot under READ COMMITTED). The attempts they were in are kept for step 4.
    IF _tip_stats_rebuild.tip_ids IS NOT NULL THEN
        old_keys := ARRAY(SELECT a.attempt_key FROM ctxgraph.tip_attempt_stats AS a
                           WHERE a.skill = _tip_stats_rebuild.skill AND a.tip_id = ANY (_tip_stats_rebuild.tip_ids));
    END IF;
    EXECUTE format('DELETE FROM ctxgraph.tip_attempt_stats AS a WHERE a.skill = $1' || only_tips, 'a.tip_id')
      USING _tip_stats_rebuild.skill, _tip_stats_rebuild.tip_ids;
    EXECUTE format('DELETE FROM ctxgraph.tip_rule_stats AS a WHERE a.skill = $1' || only_tips, 'a.tip_id')
      USING _tip_stats_rebuild.skill, _tip_stats_rebuild.tip_ids;
    EXECUTE format('DELETE FROM ctxgraph.tip_run_stats AS a WHERE a.skill = $1' || only_tips, 'a.tip_id')
      USING _tip_stats_rebuild.skill, _tip_stats_rebuild.tip_ids;
    EXECUTE format('INSERT INTO ctxgraph.tip_attempt_stats (skill, tip_id, attempt_key, rule_id, run_id, scored, outcome_sum,
                                                     weighted_sum, weight_sum, follow_known, followed, harm, harmful,
                                                     retrieved_max)
                    SELECT s.skill, s.tip_id, s.attempt_key, min(s.rule_id), min(s.run_id), count(*),
                           coalesce(sum(s.credit), 0), coalesce(sum(s.credit * s.follow_weight), 0),
                           coalesce(sum(s.follow_weight), 0), count(s.followed), count(*) FILTER (WHERE s.followed),
                           count(*) FILTER (WHERE s.followed AND s.harmful), coalesce(bool_or(s.harmful), false),
                           max(s.retrieved_at)
                      FROM ctxgraph.scored_retrievals AS s
                     WHERE s.skill = $1' || only_tips || '
                       AND EXISTS (SELECT 1 FROM ctxgraph.tips AS t WHERE t.skill = s.skill AND t.id = s.tip_id)
                     GROUP BY s.skill, s.tip_id, s.attempt_key', 's.tip_id')
      USING _tip_stats_rebuild.skill, _tip_stats_rebuild.tip_ids;
    EXECUTE format('INSERT INTO ctxgraph.tip_rule_stats (skill, tip_id, rule_id, units, followed_n, followed_sum, harm_n)
                    SELECT a.skill, a.tip_id, a.rule_id, count(*), sum(a.weight_sum / a.scored),
                           sum(a.weight_sum / a.scored * (a.outcome_sum / a.scored)),
                           sum(a.weight_sum / a.scored * a.harmful::integer)
                      FROM ctxgraph.tip_attempt_stats AS a
                     WHERE a.skill = $1' || only_tips || '
                     GROUP BY a.skill, a.tip_id, a.rule_id', 'a.tip_id')
      USING _tip_stats_rebuild.skill, _tip_stats_rebuild.tip_ids;
    EXECUTE format('INSERT INTO ctxgraph.tip_run_stats (skill, tip_id, run_id, units)
                    SELECT a.skill, a.tip_id, a.run_id, count(*)
                      FROM ctxgraph.tip_attempt_stats AS a
                     WHERE a.skill = $1' || only_tips || '
                     GROUP BY a.skill, a.tip_id, a.run_id', 'a.tip_id')
      USING _tip_stats_rebuild.skill, _tip_stats_rebuild.tip_ids;

    -- For a whole skill, the tip-level partitions were just emptied and refilled: analysed now, so
    -- that step 3 and every later reader plan on what they hold. An autovacuum that visits them
    -- while this transaction fills them counts none of its rows (not yet committed) and records
    -- thousands of pages holding 0 rows; planned on that (one row estimated), step 3 read every
    -- pair of the skill once per tip (a nested loop over a rescanned aggregate), and the rebuild
    -- of the 1M-row bench log had not ended after 12 minutes. Analysed, it took 26.8 s.
    IF _tip_stats_rebuild.tip_ids IS NULL THEN
        EXECUTE format('ANALYZE %1$I.tip_stats, %1$I.tip_attempt_stats, %1$I.tip_rule_stats, %1$I.tip_run_stats',
                       _tip_stats_rebuild.skill);
    END IF;

    -- 3. The tips: their log rows counted, their scored figures and runs summed from the pairs and
    --    (tip, run) rows just built from the log. For a whole skill in one grouping of each level
    --    (at 1M retrievals 1.0 s, against 8.4 s for 10,000 lookups of _tip_log_aggregate); for a
    --    few tips, by each tip's own rows.
    IF _tip_stats_rebuild.tip_ids IS NULL THEN
        EXECUTE 'UPDATE ctxgraph.tip_stats AS s
                    SET (retrievals, scored, attempts, outcome_sum, weighted_sum, follow_known, followed, harm,
                         last_retrieved_at, runs)
                      = (x.retrievals, x.scored, x.attempts, x.outcome_sum, x.weighted_sum, x.follow_known,
                         x.followed, x.harm, x.last_retrieved_at, x.runs),
                        evidence_version = s.evidence_version + 1,
                        refreshed_at = now()
                   FROM (SELECT t.tip_id, coalesce(l.retrievals, 0) AS retrievals, l.last_retrieved_at,
                                coalesce(p.scored, 0) AS scored, coalesce(p.attempts, 0) AS attempts,
                                coalesce(p.outcome_sum, 0) AS outcome_sum, coalesce(p.weighted_sum, 0) AS weighted_sum,
                                coalesce(p.follow_known, 0) AS follow_known, coalesce(p.followed, 0) AS followed,
                                coalesce(p.harm, 0) AS harm, coalesce(u.runs, 0) AS runs
                           FROM ctxgraph.tip_stats AS t
                           LEFT JOIN (SELECT r.tip_id, count(*) AS retrievals, max(r.retrieved_at) AS last_retrieved_at
                                        FROM ctxgraph.tip_retrievals AS r WHERE r.skill = $1
                                       GROUP BY r.tip_id) AS l ON l.tip_id = t.tip_id
                           LEFT JOIN (SELECT a.tip_id, sum(a.scored) AS scored, count(*) AS attempts,
                                             sum(a.outcome_sum) AS outcome_sum, sum(a.weighted_sum) AS weighted_sum,
                                             sum(a.follow_known) AS follow_known, sum(a.followed) AS followed,
                                             sum(a.harm) AS harm
                                        FROM ctxgraph.tip_attempt_stats AS a WHERE a.skill = $1
                                       GROUP BY a.tip_id) AS p ON p.tip_id = t.tip_id
                           LEFT JOIN (SELECT r.tip_id, count(*) AS runs
                                        FROM ctxgraph.tip_run_stats AS r WHERE r.skill = $1
                                       GROUP BY r.tip_id) AS u ON u.tip_id = t.tip_id
                          WHERE t.skill = $1) AS x
                  WHERE s.skill = $1 AND s.tip_id = x.tip_id'
          USING _tip_stats_rebuild.skill;
    ELSE
        EXECUTE 'UPDATE ctxgraph.tip_stats AS s
                    SET (retrievals, scored, attempts, outcome_sum, weighted_sum, follow_known, followed, harm,
                         last_retrieved_at) = (SELECT agg.* FROM ctxgraph._tip_log_aggregate(s.skill, s.tip_id) AS agg),
                        runs = (SELECT count(*) FROM ctxgraph.tip_run_stats AS r
                                 WHERE r.skill = s.skill AND r.tip_id = s.tip_id),
                        evidence_version = s.evidence_version + 1,
                        refreshed_at = now()
                  WHERE s.skill = $1 AND s.tip_id = ANY ($2)'
          USING _tip_stats_rebuild.skill, _tip_stats_rebuild.tip_ids;
    END IF;
    GET DIAGNOSTICS refreshed = ROW_COUNT;

    -- 4. The attempt and rule levels: from scratch for a whole skill (every tip lock is held, so
    --    no writer is half way), else for the attempts the rebuilt pairs were and are in.
    IF _tip_stats_rebuild.tip_ids IS NULL THEN
        DELETE FROM ctxgraph.rule_attempt_stats AS r WHERE r.skill = _tip_stats_rebuild.skill;
        DELETE FROM ctxgraph.rule_stats AS r WHERE r.skill = _tip_stats_rebuild.skill;
        INSERT INTO ctxgraph.rule_attempt_stats (skill, attempt_key, rule_id, units, outcome_sum, harmful)
        SELECT a.skill, a.attempt_key, min(a.rule_id), count(*), sum(a.outcome_sum / a.scored), bool_or(a.harmful)
          FROM ctxgraph.tip_attempt_stats AS a
         WHERE a.skill = _tip_stats_rebuild.skill
         GROUP BY a.skill, a.attempt_key;
        INSERT INTO ctxgraph.rule_stats (skill, rule_id, attempts, outcome_sum, harmful_attempts)
        SELECT r.skill, r.rule_id, count(*), sum(r.outcome_sum / r.units), count(*) FILTER (WHERE r.harmful)
          FROM ctxgraph.rule_attempt_stats AS r
         WHERE r.skill = _tip_stats_rebuild.skill
         GROUP BY r.skill, r.rule_id;
        EXECUTE format('ANALYZE %1$I.rule_attempt_stats, %1$I.rule_stats', _tip_stats_rebuild.skill);
    ELSE
        PERFORM ctxgraph._rule_stats_apply(_tip_stats_rebuild.skill, old_keys || ARRAY(
                    SELECT a.attempt_key FROM ctxgraph.tip_attempt_stats AS a
                     WHERE a.skill = _tip_stats_rebuild.skill AND a.tip_id = ANY (_tip_stats_rebuild.tip_ids)));
    END IF;
    RETURN refreshed;
END
$$;

COMMENT ON FUNCTION ctxgraph._tip_stats_rebuild(text, bigint[]) IS
    'Private: rebuilds one skill''s maintained levels exactly from the log for the given tips (NULL: all, attempts and rules included).';

-- refresh_tip_stats: the from-scratch rebuild, now of every level. Unchanged signature and answer.
CREATE OR REPLACE FUNCTION ctxgraph.refresh_tip_stats(skill text DEFAULT NULL, tip_ids bigint[] DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    skill_name text;
    refreshed  integer := 0;
BEGIN
    FOR skill_name IN
        SELECT s.name FROM ctxgraph.skills AS s
         WHERE refresh_tip_stats.skill IS NULL OR s.name = refresh_tip_stats.skill
         ORDER BY s.name
    LOOP
        refreshed := refreshed + ctxgraph._tip_stats_rebuild(skill_name, refresh_tip_stats.tip_ids);
    END LOOP;
    RETURN refreshed;
END
$$;

COMMENT ON FUNCTION ctxgraph.refresh_tip_stats(text, bigint[]) IS
    'Rebuilds ctxgraph.tip_stats and the levels behind it (tip_attempt_stats, tip_rule_stats, tip_run_stats, rule_attempt_stats, rule_stats) exactly from the log for the given tips (NULL: all tips of the skill, or of every skill); returns the tips refreshed. The triggers keep them by deltas; call it by hand only to rebuild.';

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
            SELECT n.skill, array_agg(n.tip_id) AS tip_ids,
                   array_agg(CASE WHEN n.outcome_value IS NOT NULL THEN coalesce(n.attempt_id, -n.id) END) AS attempt_keys,
                   array_agg(1) AS signs, array_agg(n.retrieved_at) AS retrieved_ats, array_agg(false) AS removals
              FROM new_rows AS n GROUP BY n.skill ORDER BY n.skill
        LOOP
            PERFORM ctxgraph._tip_stats_apply(batch.skill, batch.tip_ids, batch.attempt_keys, batch.signs,
                                              batch.retrieved_ats, batch.removals);
        END LOOP;
    ELSIF TG_OP = 'DELETE' THEN
        FOR batch IN
            SELECT o.skill, array_agg(o.tip_id) AS tip_ids,
                   array_agg(CASE WHEN o.outcome_value IS NOT NULL THEN coalesce(o.attempt_id, -o.id) END) AS attempt_keys,
                   array_agg(-1) AS signs, array_agg(o.retrieved_at) AS retrieved_ats, array_agg(true) AS removals
              FROM old_rows AS o GROUP BY o.skill ORDER BY o.skill
        LOOP
            PERFORM ctxgraph._tip_stats_apply(batch.skill, batch.tip_ids, batch.attempt_keys, batch.signs,
                                              batch.retrieved_ats, batch.removals);
        END LOOP;
    ELSE
        -- One pass over the changed rows. Those whose follow columns alone changed in a scored row
        -- (the scorer's write-back) are moved by each row's change of follow branch; every other
        -- changed row contributes signed elements (its old side leaves, its new side enters).
        FOR batch IN
            WITH changed AS MATERIALIZED (
                SELECT o.skill, o.id, o.tip_id AS old_tip, n.tip_id AS new_tip,
                       CASE WHEN o.outcome_value IS NOT NULL THEN coalesce(o.attempt_id, -o.id) END AS old_key,
                       CASE WHEN n.outcome_value IS NOT NULL THEN coalesce(n.attempt_id, -n.id) END AS new_key,
                       o.retrieved_at AS old_at, n.retrieved_at AS new_at,
                       o.tip_followed_llm AS old_llm, o.tip_followed_emb AS old_emb, o.follow_probability AS old_probability,
                       n.tip_followed_llm AS new_llm, n.tip_followed_emb AS new_emb, n.follow_probability AS new_probability,
                       o.outcome_value IS NOT NULL
                       AND (o.tip_id, o.attempt_id, o.run_id, o.rule_id, o.outcome_value, o.outcome_confidence, o.retrieved_at)
                           IS NOT DISTINCT FROM
                           (n.tip_id, n.attempt_id, n.run_id, n.rule_id, n.outcome_value, n.outcome_confidence, n.retrieved_at)
                       AS follow_only
                  FROM old_rows AS o JOIN new_rows AS n ON n.skill = o.skill AND n.id = o.id
                 WHERE (o.tip_id, o.attempt_id, o.rule_id, o.outcome_value, o.outcome_confidence,
                        o.tip_followed_llm, o.tip_followed_emb, o.follow_probability, o.retrieved_at)
                       IS DISTINCT FROM
                       (n.tip_id, n.attempt_id, n.rule_id, n.outcome_value, n.outcome_confidence,
                        n.tip_followed_llm, n.tip_followed_emb, n.follow_probability, n.retrieved_at)
            ),
            follow AS (
                SELECT c.skill, array_agg(c.new_tip) AS tip_ids, array_agg(c.new_key) AS attempt_keys,
                       array_agg(c.old_llm) AS old_llm, array_agg(c.old_emb) AS old_emb,
                       array_agg(c.old_probability) AS old_probability, array_agg(c.new_llm) AS new_llm,
                       array_agg(c.new_emb) AS new_emb, array_agg(c.new_probability) AS new_probability
                  FROM changed AS c WHERE c.follow_only GROUP BY c.skill
            ),
            elements AS (
                SELECT c.skill, array_agg(e.tip_id) AS tip_ids, array_agg(e.attempt_key) AS attempt_keys,
                       array_agg(e.sign) AS signs, array_agg(e.retrieved_at) AS retrieved_ats,
                       array_agg(e.removal) AS removals
                  FROM changed AS c
                 CROSS JOIN LATERAL (
                       VALUES (c.old_tip, c.old_key, -1, c.old_at, c.old_at IS DISTINCT FROM c.new_at OR c.old_tip <> c.new_tip),
                              (c.new_tip, c.new_key, 1, c.new_at, false)
                       ) AS e (tip_id, attempt_key, sign, retrieved_at, removal)
                 WHERE NOT c.follow_only
                 GROUP BY c.skill
            )
            SELECT coalesce(f.skill, e.skill) AS skill, f.tip_ids AS follow_tip_ids, f.attempt_keys AS follow_attempt_keys,
                   f.old_llm, f.old_emb, f.old_probability, f.new_llm, f.new_emb, f.new_probability,
                   e.tip_ids, e.attempt_keys, e.signs, e.retrieved_ats, e.removals
              FROM follow AS f FULL JOIN elements AS e ON e.skill = f.skill
             ORDER BY 1
        LOOP
            -- Both kinds in one statement (a write-back of scored rows and of rows whose attempt
            -- has no result yet): all their tips are locked together first, in order. Each call
            -- locks only its own, so the second would take a tip that sorts before one the first
            -- already holds, and deadlock with any statement locking both in order.
            IF batch.follow_tip_ids IS NOT NULL AND batch.tip_ids IS NOT NULL THEN
                PERFORM ctxgraph._tip_stats_lock(batch.skill, batch.follow_tip_ids || batch.tip_ids);
            END IF;
            IF batch.follow_tip_ids IS NOT NULL THEN
                PERFORM ctxgraph._tip_stats_follow_apply(batch.skill, batch.follow_tip_ids, batch.follow_attempt_keys,
                                                         batch.old_llm, batch.old_emb, batch.old_probability,
                                                         batch.new_llm, batch.new_emb, batch.new_probability);
            END IF;
            IF batch.tip_ids IS NOT NULL THEN
                PERFORM ctxgraph._tip_stats_apply(batch.skill, batch.tip_ids, batch.attempt_keys, batch.signs,
                                                  batch.retrieved_ats, batch.removals);
            END IF;
        END LOOP;
    END IF;
    RETURN NULL;
END
$$;

-- A changed failure mode changes harm in every pair of that attempt: recompute those pairs. Only
-- the log rows of an attempt that has scored rows (a row of rule_attempt_stats, read by its only
-- key) are read, one attempt at a time. As a join of the changed attempts to the log, the plan a
-- session made on an empty log scanned the whole log for every outcome recorded (record_outcome
-- sets its attempt's result before its rows' outcomes, so there is nothing to read then).
CREATE OR REPLACE FUNCTION ctxgraph._tip_stats_after_attempts_update()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
SET enable_seqscan = off
AS $$
DECLARE
    batch record;
BEGIN
    FOR batch IN
        WITH changed AS MATERIALIZED (
            SELECT n.skill, n.id
              FROM old_rows AS o
              JOIN new_rows AS n ON n.skill = o.skill AND n.id = o.id
             WHERE o.failure_mode IS DISTINCT FROM n.failure_mode
               AND EXISTS (SELECT 1 FROM ctxgraph.rule_attempt_stats AS a
                            WHERE a.skill = n.skill AND a.attempt_key = n.id OFFSET 0)
        )
        SELECT r.skill, array_agg(r.tip_id) AS tip_ids, array_agg(r.attempt_id) AS attempt_keys,
               array_agg(0) AS signs, array_agg(NULL::timestamptz) AS retrieved_ats, array_agg(false) AS removals
          FROM (SELECT DISTINCT c.skill, r.tip_id, c.id AS attempt_id
                  FROM changed AS c
                 CROSS JOIN LATERAL (SELECT r.tip_id FROM ctxgraph.tip_retrievals AS r
                                      WHERE r.skill = c.skill AND r.attempt_id = c.id AND r.outcome_value IS NOT NULL
                                     OFFSET 0) AS r) AS r
         GROUP BY r.skill ORDER BY r.skill
    LOOP
        PERFORM ctxgraph._tip_stats_apply(batch.skill, batch.tip_ids, batch.attempt_keys, batch.signs,
                                          batch.retrieved_ats, batch.removals);
    END LOOP;
    RETURN NULL;
END
$$;

-- TRUNCATE fires no row or statement trigger of INSERT, UPDATE or DELETE, so without this the
-- levels kept the figures of rows that no longer exist. A TRUNCATE of a skill's log (directly,
-- through the parent, or by CASCADE from its attempts, runs or tips) rebuilds that skill's levels
-- from what is left. The trigger is made on the parent, where it only stands as the definition
-- ensure_skill_partitions copies: a TRUNCATE of the parent also fires every partition's copy, and
-- each rebuilds its own skill.
CREATE FUNCTION ctxgraph._tip_stats_after_retrievals_truncate()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
DECLARE
    skill_name text;
BEGIN
    SELECT s.name INTO skill_name FROM ctxgraph.skills AS s WHERE s.name = TG_TABLE_SCHEMA;
    IF FOUND THEN
        PERFORM ctxgraph._tip_stats_rebuild(skill_name, NULL);
    END IF;
    RETURN NULL;
END
$$;

COMMENT ON FUNCTION ctxgraph._tip_stats_after_retrievals_truncate() IS
    'Private: after a TRUNCATE of a skill''s tip_retrievals, rebuilds that skill''s maintained levels from the log (the trigger tip_stats_after_truncate).';

CREATE TRIGGER tip_stats_after_truncate AFTER TRUNCATE ON ctxgraph.tip_retrievals
    FOR EACH STATEMENT EXECUTE FUNCTION ctxgraph._tip_stats_after_retrievals_truncate();

REVOKE ALL ON FUNCTION ctxgraph._tip_pair_aggregate(text, bigint, bigint),
    ctxgraph._rule_stats_apply(text, bigint[]),
    ctxgraph._tip_stats_lock(text, bigint[]),
    ctxgraph._tip_stats_apply(text, bigint[], bigint[], integer[], timestamptz[], boolean[]),
    ctxgraph._tip_stats_follow_apply(text, bigint[], bigint[], boolean[], double precision[], double precision[],
                                     boolean[], double precision[], double precision[]),
    ctxgraph._tip_stats_rebuild(text, bigint[]),
    ctxgraph._tip_stats_after_retrievals_truncate() FROM PUBLIC;

-- Partitions of the new tables for existing skills (add_skill makes them for later ones), then
-- every level built from the log.
DO $$ BEGIN PERFORM ctxgraph.ensure_skill_partitions(); END $$;
DO $$ BEGIN PERFORM ctxgraph.refresh_tip_stats(); END $$;

COMMIT;
