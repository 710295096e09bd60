-- Deploy ctxgraph:function_ingest_run_log to pg
-- requires: function_ingest_run_log@v0.7.0
-- requires: table_group_roles

-- Rework: the grants go through ctxgraph._grant, which names the roles from ctxgraph.group_roles,
-- instead of spelling them; the same grants, the same definition of ingest_run_log. ingest_staging
-- is defined once, where it is now: privileges_write_path, which makes the staging table as the owner.
--
-- Bulk ingest of a run log. The per-call write path costs four round trips and four statements
-- (each firing the tip_stats triggers) per attempt; a whole log is instead staged with COPY into a
-- temporary table (ctxgraph.ingest_staging) and written by ctxgraph.ingest_run_log in one
-- statement per table: the runs, the attempts with their results, and the retrievals already
-- linked to their attempts and carrying their outcomes. The end state is the one the per-call
-- replay leaves (the loader's replay: log_retrievals per retrieval line; save_attempt,
-- update_retrieval_attempt_ids and record_outcome per attempt line; the run's end per run_end
-- line). The checks are the per-call functions' own helpers (function_write_checks), applied to
-- every line at once; the earliest bad line raises, with its SQLSTATE, and nothing is written.
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph.ingest_run_log(skill text)
RETURNS TABLE (run_id text, attempts integer, retrievals integer)
LANGUAGE plpgsql
-- No plan_cache_mode here: a function's setting holds for everything run inside it, the foreign
-- key checks of every row written included, and forcing custom plans replanned each of those
-- checks (then four per retrieval, 75 us each: 14 of the 24 s of a 50,000-retrieval load). The staging
-- table is emptied or made anew for each load, which replans these statements anyway.
SET jit = off
-- The owner's rights and a fixed search_path, as privileges_write_path set them: a CREATE OR
-- REPLACE sets every attribute of the function anew.
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    grading       text := ctxgraph._require_skill(ingest_run_log.skill);
    confidence    double precision := ctxgraph.param('outcome.confidence');
    bad           record;
    existing_runs text[];
BEGIN
    -- Only a staging table ingest_staging made (as the owner) is read and emptied here.
    PERFORM ctxgraph._refuse_foreign_temp_objects('ctxgraph_run_log');
    IF to_regclass('pg_temp.ctxgraph_run_log') IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: nothing staged: call ctxgraph.ingest_staging() and COPY the run log first'
            USING ERRCODE = 'no_data_found';
    END IF;
    -- The staging table is new to the planner: statistics let it pick hash joins over the lines.
    ANALYZE pg_temp.ctxgraph_run_log;

    -- 1. The earliest bad line. Each line gets the checks its per-call function makes, in that
    --    function's order (step); a line's first problem is the one the per-call replay would
    --    have raised there. Nothing is written before this passes.
    SELECT q.line, q.sqlstate, q.message, q.hint INTO bad
      FROM (
        SELECT l.line, 1 AS step, p.sqlstate, p.message, p.hint
          FROM pg_temp.ctxgraph_run_log AS l
         CROSS JOIN LATERAL ctxgraph._retrieval_batch_problem(l.run_id, l.rule_id, l.tip_ids, l.similarity_scores,
                                                              l.retrieved_at) AS p
         WHERE l.kind = 'retrieval'
        UNION ALL
        SELECT l.line, 2, '23503', format('ctxgraph: no %s tip with id %s', ingest_run_log.skill, array_to_string(m.ids, ', ')),
               NULL
          FROM pg_temp.ctxgraph_run_log AS l
         CROSS JOIN LATERAL (SELECT array_agg(t ORDER BY t) AS ids
                               FROM ctxgraph._missing_tips(ingest_run_log.skill, l.tip_ids) AS t) AS m
         WHERE l.kind = 'retrieval' AND m.ids IS NOT NULL
        UNION ALL
        SELECT l.line, 1, p.sqlstate, p.message, p.hint
          FROM pg_temp.ctxgraph_run_log AS l
         CROSS JOIN LATERAL ctxgraph._attempt_problem(l.run_id, l.rule_id, l.attempt_number, l.started_at, l.ended_at) AS p
         WHERE l.kind = 'attempt'
        UNION ALL
        -- save_attempt's 23505: an attempt saved earlier in this log ...
        SELECT d.line, 2, '23505',
               format('ctxgraph: attempt %s of rule %s in run %s is already saved (by line %s)', d.attempt_number,
                      quote_literal(d.rule_id), quote_literal(d.run_id), d.first_line), NULL
          FROM (SELECT l.line, l.run_id, l.rule_id, l.attempt_number,
                       min(l.line) OVER (PARTITION BY l.run_id, l.rule_id, l.attempt_number) AS first_line
                  FROM pg_temp.ctxgraph_run_log AS l
                 WHERE l.kind = 'attempt') AS d
         WHERE d.line > d.first_line
        UNION ALL
        -- ... or before it.
        SELECT l.line, 2, '23505',
               format('ctxgraph: attempt %s of rule %s in run %s is already saved (id %s)', l.attempt_number,
                      quote_literal(l.rule_id), quote_literal(l.run_id), a.id), NULL
          FROM pg_temp.ctxgraph_run_log AS l
          JOIN ctxgraph.attempts AS a
            ON a.skill = ingest_run_log.skill AND a.run_id = l.run_id AND a.rule_id = l.rule_id
           AND a.attempt_number = l.attempt_number
         WHERE l.kind = 'attempt'
        UNION ALL
        -- record_outcome's checks (graded_outcome's).
        SELECT l.line, 3, p.sqlstate, p.message, p.hint
          FROM pg_temp.ctxgraph_run_log AS l
         CROSS JOIN LATERAL ctxgraph._outcome_problem(ingest_run_log.skill, grading, l.passed, l.attempt_number,
                                                      l.failure_mode) AS p
         WHERE l.kind = 'attempt'
        UNION ALL
        -- A run's end at infinity (runs_finite_instants), as the replay's UPDATE of ended_at would refuse it.
        SELECT l.line, 1, '22023', format('ctxgraph: a run''s ended_at must be a finite instant, got %s', l.ended_at), NULL
          FROM pg_temp.ctxgraph_run_log AS l
         WHERE l.kind = 'run_end' AND NOT isfinite(l.ended_at)
        UNION ALL
        -- A run's end before its start (runs_ends_after_start), for the run_end lines step 5 applies:
        -- the run's row, else the start its first writing line gives it in step 2.
        SELECT l.line, 1, '22023',
               format('ctxgraph: run %s ends (%s) before it starts (%s)', quote_literal(l.run_id), l.ended_at,
                      s.started_at), NULL
          FROM pg_temp.ctxgraph_run_log AS l
         CROSS JOIN LATERAL (
               SELECT coalesce((SELECT r.started_at FROM ctxgraph.runs AS r
                                 WHERE r.skill = ingest_run_log.skill AND r.id = l.run_id),
                               (SELECT CASE WHEN w.kind = 'retrieval' THEN w.retrieved_at ELSE coalesce(w.started_at, now()) END
                                  FROM pg_temp.ctxgraph_run_log AS w
                                 WHERE w.run_id = l.run_id AND w.line < l.line
                                   AND (w.kind = 'attempt' OR (w.kind = 'retrieval' AND cardinality(w.tip_ids) > 0))
                                 ORDER BY w.line LIMIT 1)) AS started_at) AS s
         WHERE l.kind = 'run_end' AND l.ended_at < s.started_at
        UNION ALL
        -- Line numbers name the lines (retrievals are linked to the attempt line after them): a
        -- number given twice, which only a caller of ingest_run_log can stage, is refused first.
        SELECT d.line, 0, '22023', format('ctxgraph: line number %s is given to %s lines', d.line, d.copies), NULL
          FROM (SELECT l.line, count(*) AS copies FROM pg_temp.ctxgraph_run_log AS l
                 GROUP BY l.line HAVING count(*) > 1) AS d
      ) AS q
     ORDER BY q.line, q.step
     LIMIT 1;
    IF FOUND THEN
        PERFORM ctxgraph._raise_problem(bad.sqlstate, bad.message, bad.hint, bad.line);
    END IF;

    -- Runs the log ends that existed before it (the others are ended only by a run_end line that
    -- follows the line creating them, as in the replay).
    SELECT array_agg(r.id) INTO existing_runs
      FROM ctxgraph.runs AS r
     WHERE r.skill = ingest_run_log.skill
       AND r.id IN (SELECT l.run_id FROM pg_temp.ctxgraph_run_log AS l WHERE l.kind = 'run_end');

    -- 2. Runs, started by their first line that writes (an empty retrieval batch writes nothing).
    INSERT INTO ctxgraph.runs (skill, id, started_at)
    SELECT DISTINCT ON (l.run_id) ingest_run_log.skill, l.run_id,
           CASE WHEN l.kind = 'retrieval' THEN l.retrieved_at ELSE coalesce(l.started_at, now()) END
      FROM pg_temp.ctxgraph_run_log AS l
     WHERE l.kind = 'attempt' OR (l.kind = 'retrieval' AND cardinality(l.tip_ids) > 0)
     ORDER BY l.run_id, l.line
    ON CONFLICT DO NOTHING;

    -- 3. Attempts with their results, in line order (ids as the replay would draw them).
    INSERT INTO ctxgraph.attempts (skill, run_id, rule_id, attempt_number, passed, failure_mode, approach,
                                   started_at, ended_at)
    SELECT ingest_run_log.skill, l.run_id, l.rule_id, l.attempt_number, l.passed, l.failure_mode, l.approach,
           l.started_at, l.ended_at
      FROM pg_temp.ctxgraph_run_log AS l
     WHERE l.kind = 'attempt'
     ORDER BY l.line;

    -- 4. Retrievals in line and rank order. A retrieval line belongs to the attempt line of its run,
    --    rule and attempt number that follows it (the replay links what is pending when the attempt
    --    line comes); it then carries that attempt's graded outcome, computed once per distinct
    --    result. Lines no attempt line follows stay unlinked, as in the replay.
    INSERT INTO ctxgraph.tip_retrievals (skill, run_id, attempt_id, tip_id, rule_id, rank, similarity_score,
                                         outcome_value, outcome_confidence, retrieved_at)
    SELECT ingest_run_log.skill, l.run_id, k.attempt_id, u.tip_id, l.rule_id, u.rank::integer, u.similarity_score,
           k.outcome, CASE WHEN k.attempt_id IS NOT NULL THEN confidence END, l.retrieved_at
      FROM pg_temp.ctxgraph_run_log AS l
     CROSS JOIN LATERAL unnest(l.tip_ids, l.similarity_scores) WITH ORDINALITY AS u (tip_id, similarity_score, rank)
      LEFT JOIN (
            SELECT al.line, al.run_id, al.rule_id, al.attempt_number, a.id AS attempt_id, o.outcome
              FROM pg_temp.ctxgraph_run_log AS al
              JOIN ctxgraph.attempts AS a
                ON a.skill = ingest_run_log.skill AND a.run_id = al.run_id AND a.rule_id = al.rule_id
               AND a.attempt_number = al.attempt_number
              JOIN (SELECT c.passed, c.attempt_number, c.failure_mode,
                           ctxgraph.graded_outcome(ingest_run_log.skill, c.passed, c.attempt_number, c.failure_mode)
                               AS outcome
                      FROM (SELECT DISTINCT c.passed, c.attempt_number, c.failure_mode
                              FROM pg_temp.ctxgraph_run_log AS c WHERE c.kind = 'attempt') AS c) AS o
                ON o.passed = al.passed AND o.attempt_number = al.attempt_number
               AND o.failure_mode IS NOT DISTINCT FROM al.failure_mode
             WHERE al.kind = 'attempt') AS k
        ON k.run_id = l.run_id AND k.rule_id = l.rule_id AND k.attempt_number = l.attempt_number AND k.line > l.line
     WHERE l.kind = 'retrieval'
     ORDER BY l.line, u.rank;

    -- 5. Run ends: the last run_end line of a run that exists by then.
    UPDATE ctxgraph.runs AS r
       SET ended_at = e.ended_at
      FROM (SELECT DISTINCT ON (l.run_id) l.run_id, l.ended_at
              FROM pg_temp.ctxgraph_run_log AS l
             WHERE l.kind = 'run_end' AND l.ended_at IS NOT NULL
               AND (l.run_id = ANY (existing_runs)
                    OR EXISTS (SELECT 1 FROM pg_temp.ctxgraph_run_log AS w
                                WHERE w.run_id = l.run_id AND w.line < l.line
                                  AND (w.kind = 'attempt' OR (w.kind = 'retrieval' AND cardinality(w.tip_ids) > 0))))
             ORDER BY l.run_id, l.line DESC) AS e
     WHERE r.skill = ingest_run_log.skill AND r.id = e.run_id;

    -- What was loaded per run, in the order the runs first appear.
    RETURN QUERY
    SELECT l.run_id, (count(*) FILTER (WHERE l.kind = 'attempt'))::integer,
           coalesce(sum(cardinality(l.tip_ids)) FILTER (WHERE l.kind = 'retrieval'), 0)::integer
      FROM pg_temp.ctxgraph_run_log AS l
     WHERE l.kind IN ('retrieval', 'attempt')
     GROUP BY l.run_id
     ORDER BY min(l.line);
    TRUNCATE pg_temp.ctxgraph_run_log;
END
$$;

COMMENT ON FUNCTION ctxgraph.ingest_run_log(text) IS
    'Writes the run log staged in pg_temp.ctxgraph_run_log (ctxgraph.ingest_staging) as the per-call write path would, in one statement per table, and returns attempts and retrievals per run; the earliest bad line raises the per-call SQLSTATE (22004, 22023, 23503, 23505) naming its line, and nothing is written.';

REVOKE ALL ON FUNCTION ctxgraph.ingest_staging(), ctxgraph.ingest_run_log(text) FROM PUBLIC;
DO $$ BEGIN PERFORM ctxgraph._grant(
    'EXECUTE ON FUNCTION ctxgraph.ingest_staging(), ctxgraph.ingest_run_log(text)',
    '{writer}'); END $$;

COMMIT;
