-- Deploy ctxgraph:scoring_leases to pg
-- requires: table_scoring_state
-- requires: column_follow_probability
-- requires: table_parameters
-- requires: table_group_roles
-- requires: privileges_functions

-- The scoring pass asks a judge and embeds scripts for minutes; it must never hold a lock that a
-- writer (record_outcome, log_retrievals, ctxgraph load) waits for meanwhile. So a pass does not
-- lock the rows it scores: it leases them.
--  * begin_scoring_pass() names the pass (a uuid) and takes a session advisory lock that says the
--    pass is alive; a killed pass, or a server restart, ends the session and so every lease of it.
--  * claim_scoring_batch() records a lease (owner, expiry) per row in ctxgraph.scoring_leases and
--    returns the rows, in one short statement; it reads tip_retrievals and locks none of its rows.
--    A row is claimable when no live pass holds an unexpired lease on it.
--  * write_scoring_results() writes one short group back: only rows still leased to this pass and
--    still unscored (or leased for a re-score), with the row locks taken SKIP LOCKED in id order and
--    every other lock wait bounded by scoring.write_lock_timeout_ms (below deadlock_timeout): a row
--    a writer holds comes back 'busy' for the pass to retry, so the pass never waits on a writer that
--    could be waiting on it, and a writer waits at most for one short write.
--  * whether a row is stamped (tip_followed_computed_at set, never asked again) is decided here,
--    from ctxgraph.scoring_statuses: only an answer the same model, prompt and inputs would repeat is
--    final; a missing script or a judge that is down or misconfigured leaves the row for the next
--    pass. --rescore names statuses of stamped rows to score again.
BEGIN;

INSERT INTO ctxgraph.parameters (name, value, description) VALUES
    ('scoring.lease_seconds', 900,
     'Seconds a scoring pass''s claim on a retrieval lasts; after that (or as soon as the pass''s session ends) another pass may claim the row. Longer than a batch''s judge and embedding work.'),
    ('scoring.write_lock_timeout_ms', 200,
     'Milliseconds a scoring pass''s write-back waits for any lock before giving up and retrying later; below deadlock_timeout (1 s by default), so the pass yields before a deadlock with a writer could be detected.');

CREATE TABLE ctxgraph.scoring_statuses (
    leg         text NOT NULL CHECK (leg IN ('judge', 'embedding')),
    status      text NOT NULL CHECK (status ~ '^[a-z][a-z_]*$'),
    final       boolean NOT NULL,
    description text NOT NULL CHECK (btrim(description) <> ''),
    PRIMARY KEY (leg, status)
);

COMMENT ON TABLE ctxgraph.scoring_statuses IS
    'Every status a scoring leg records in retrieval_scores, and whether it is final (the row is stamped) or left for the next pass.';
COMMENT ON COLUMN ctxgraph.scoring_statuses.leg IS 'judge (retrieval_scores.llm_status) or embedding (emb_status).';
COMMENT ON COLUMN ctxgraph.scoring_statuses.status IS 'The status.';
COMMENT ON COLUMN ctxgraph.scoring_statuses.final IS 'True: the same model, prompt and inputs would give the same result, the row is stamped. False: the row stays unscored and the next pass retries it.';
COMMENT ON COLUMN ctxgraph.scoring_statuses.description IS 'What the status means.';

INSERT INTO ctxgraph.scoring_statuses (leg, status, final, description) VALUES
    ('judge', 'judged', true, 'the judge answered a verdict (cached by tip, script, model and prompt)'),
    ('judge', 'unparseable', true, 'the judge answered something that is not a verdict; at temperature 0 it would again'),
    ('judge', 'empty_response', true, 'the judge answered with no content; at temperature 0 it would again'),
    ('judge', 'http_refused', true, 'the judge server refused this question with a permanent HTTP status (e.g. 413, too large)'),
    ('judge', 'decided_by_signal', true, 'judge_policy uncertain: the calibrated follow probability lay outside the cascade band'),
    ('judge', 'judge_disabled', true, 'the pass ran with --no-judge'),
    ('judge', 'no_prompt', true, 'the skill has no judge prompt'),
    ('judge', 'no_script', false, 'no fix script for the retrieval''s attempt in the log (no attempt line, a truncated line, no fix_script)'),
    ('judge', 'judge_not_configured', false, 'no judge server (--judge-url or CTXGRAPH_JUDGE_URL empty)'),
    ('judge', 'judge_unreachable', false, 'the judge server could not be reached or listed no model'),
    ('judge', 'judge_config', false, 'the judge server answered 401, 403 or 404 (credentials, route or model wrong)'),
    ('judge', 'http_error', false, 'the judge server failed (HTTP 5xx, or a 200 that is not JSON) after the retries'),
    ('judge', 'rate_limited', false, 'the judge server answered 429 after the retries'),
    ('judge', 'timeout', false, 'the judge did not answer within --judge-timeout'),
    ('judge', 'connection', false, 'the connection to the judge failed'),
    ('embedding', 'computed', true, 'the cosine between tip and script was computed'),
    ('embedding', 'nan', true, 'the cosine is not a number (an empty vector); the same model would repeat it'),
    ('embedding', 'embed_disabled', true, 'the pass ran with --no-embed'),
    ('embedding', 'no_script', false, 'no fix script for the retrieval''s attempt in the log'),
    ('embedding', 'model_missing', false, 'the embedding model could not be loaded');

CREATE TABLE ctxgraph.scoring_leases (
    skill        text NOT NULL,
    retrieval_id bigint NOT NULL,
    pass_id      uuid NOT NULL,
    owner_pid    integer NOT NULL,
    rescore      boolean NOT NULL,
    leased_at    timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (skill, retrieval_id),
    FOREIGN KEY (skill, retrieval_id) REFERENCES ctxgraph.tip_retrievals (skill, id) ON DELETE CASCADE,
    CHECK (expires_at > leased_at)
);

CREATE INDEX scoring_leases_pass ON ctxgraph.scoring_leases (pass_id);

COMMENT ON TABLE ctxgraph.scoring_leases IS
    'Which scoring pass is working on a retrieval, until when: written only by claim_scoring_batch, write_scoring_results and end_scoring_pass.';
COMMENT ON COLUMN ctxgraph.scoring_leases.skill IS 'The skill.';
COMMENT ON COLUMN ctxgraph.scoring_leases.retrieval_id IS 'The retrieval claimed.';
COMMENT ON COLUMN ctxgraph.scoring_leases.pass_id IS 'The pass, as begin_scoring_pass named it.';
COMMENT ON COLUMN ctxgraph.scoring_leases.owner_pid IS 'Backend of the pass''s session; the lease is void once that session no longer holds the pass lock.';
COMMENT ON COLUMN ctxgraph.scoring_leases.rescore IS 'The row was stamped and is claimed again by --rescore: written back only if the new result is final.';
COMMENT ON COLUMN ctxgraph.scoring_leases.leased_at IS 'When the pass claimed the row.';
COMMENT ON COLUMN ctxgraph.scoring_leases.expires_at IS 'After this another pass may claim the row (scoring.lease_seconds after leased_at).';

-- The advisory lock class of live passes: (this class, the pass's backend pid), held for the session.
CREATE FUNCTION ctxgraph._scoring_pass_lock_class()
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT 1668577383 $$;  -- 'ctxg' as four bytes

COMMENT ON FUNCTION ctxgraph._scoring_pass_lock_class() IS
    'Private: the first key of the session advisory lock a live scoring pass holds (the second is its backend pid).';

-- Backends of this database whose session holds a pass lock: the owners whose leases are live.
CREATE FUNCTION ctxgraph._live_scoring_passes()
RETURNS SETOF integer
LANGUAGE sql STABLE
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
    SELECT l.objid::bigint::integer
      FROM pg_catalog.pg_locks AS l
     WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
       AND l.classid = ctxgraph._scoring_pass_lock_class()::oid
       AND l.database = (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname = pg_catalog.current_database())
       AND l.pid = l.objid::bigint::integer
$$;

COMMENT ON FUNCTION ctxgraph._live_scoring_passes() IS
    'Private: backend pids of the sessions running a scoring pass in this database (their pass lock is held).';

CREATE FUNCTION ctxgraph._require_scoring_pass(pass_id uuid)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
BEGIN
    IF pass_id IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: a scoring pass id is required' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF pg_catalog.pg_backend_pid() NOT IN (SELECT ctxgraph._live_scoring_passes()) THEN
        RAISE EXCEPTION 'ctxgraph: this session has not begun a scoring pass'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'SELECT ctxgraph.begin_scoring_pass() first, on the same connection.';
    END IF;
END
$$;

COMMENT ON FUNCTION ctxgraph._require_scoring_pass(uuid) IS
    'Private: raises 22004 for a NULL pass id and 55000 when this session holds no pass lock.';

CREATE FUNCTION ctxgraph.begin_scoring_pass()
RETURNS uuid
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
BEGIN
    -- Session-scoped on purpose: it outlives the pass's short transactions and ends with the session.
    IF pg_catalog.pg_backend_pid() NOT IN (SELECT ctxgraph._live_scoring_passes()) THEN
        PERFORM pg_catalog.pg_advisory_lock(ctxgraph._scoring_pass_lock_class(), pg_catalog.pg_backend_pid());
    END IF;
    RETURN pg_catalog.gen_random_uuid();
END
$$;

COMMENT ON FUNCTION ctxgraph.begin_scoring_pass() IS
    'Names a new scoring pass and marks this session as running one (a session advisory lock): its leases are void once the session ends.';

CREATE FUNCTION ctxgraph.end_scoring_pass(skill text, pass_id uuid)
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    released integer;
BEGIN
    PERFORM ctxgraph._require_skill(end_scoring_pass.skill);
    IF end_scoring_pass.pass_id IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: a scoring pass id is required' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    DELETE FROM ctxgraph.scoring_leases AS l
     WHERE l.skill = end_scoring_pass.skill AND l.pass_id = end_scoring_pass.pass_id;
    GET DIAGNOSTICS released = ROW_COUNT;
    PERFORM pg_catalog.pg_advisory_unlock(ctxgraph._scoring_pass_lock_class(), pg_catalog.pg_backend_pid())
      FROM ctxgraph._live_scoring_passes() AS p (pid) WHERE p.pid = pg_catalog.pg_backend_pid();
    RETURN released;
END
$$;

COMMENT ON FUNCTION ctxgraph.end_scoring_pass(text, uuid) IS
    'Releases every lease the pass still holds in the skill and its session''s pass lock; returns the leases released.';

-- A batch can take longer than a lease (a slow judge: 256 rows at 8 in flight and a 60 s timeout
-- each is half an hour). Without renewal another pass would take the rows over when the lease ends
-- and ask the same questions again; the pass renews its leases while it works instead.
CREATE FUNCTION ctxgraph.renew_scoring_leases(skill text, pass_id uuid)
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    renewed integer;
BEGIN
    PERFORM ctxgraph._require_skill(renew_scoring_leases.skill);
    PERFORM ctxgraph._require_scoring_pass(renew_scoring_leases.pass_id);
    -- Only leases this session still owns: a lease another pass took over after it expired stays theirs.
    UPDATE ctxgraph.scoring_leases AS l
       SET expires_at = clock_timestamp() + make_interval(secs => ctxgraph.param('scoring.lease_seconds'))
     WHERE l.skill = renew_scoring_leases.skill AND l.pass_id = renew_scoring_leases.pass_id
       AND l.owner_pid = pg_catalog.pg_backend_pid();
    GET DIAGNOSTICS renewed = ROW_COUNT;
    RETURN renewed;
END
$$;

COMMENT ON FUNCTION ctxgraph.renew_scoring_leases(text, uuid) IS
    'Extends every lease this session''s pass holds in the skill to scoring.lease_seconds from now; returns the leases renewed.';

-- The rows a pass would score: unscored, or stamped with one of the rescore statuses.
CREATE FUNCTION ctxgraph.scoring_candidates(skill text, run_id text, rescore text[] DEFAULT '{}')
RETURNS TABLE (retrieval_id bigint, rule_id text, attempt_id bigint, attempt_number integer,
               retrieved_at timestamptz, tip_id bigint, tip_body text, stamped boolean)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    unknown text[];
BEGIN
    PERFORM ctxgraph._require_skill(scoring_candidates.skill);
    IF scoring_candidates.run_id IS NULL OR scoring_candidates.rescore IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: scoring_candidates needs a run id and a (possibly empty) rescore array'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM ctxgraph.runs AS r
                    WHERE r.skill = scoring_candidates.skill AND r.id = scoring_candidates.run_id) THEN
        RAISE EXCEPTION 'ctxgraph: no run % in skill %', quote_literal(scoring_candidates.run_id), scoring_candidates.skill
            USING ERRCODE = 'no_data_found';
    END IF;
    SELECT array_agg(DISTINCT u.reason ORDER BY u.reason) INTO unknown
      FROM unnest(scoring_candidates.rescore) AS u (reason)
     WHERE u.reason IS NULL OR u.reason NOT IN (SELECT s.status FROM ctxgraph.scoring_statuses AS s);
    IF unknown IS NOT NULL THEN
        RAISE EXCEPTION 'ctxgraph: unknown rescore reason %; the reasons are the statuses in ctxgraph.scoring_statuses: %',
            array_to_string(unknown, ', ', 'NULL'),
            (SELECT string_agg(DISTINCT s.status, ', ' ORDER BY s.status) FROM ctxgraph.scoring_statuses AS s)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT r.id, r.rule_id, r.attempt_id, a.attempt_number, r.retrieved_at, r.tip_id, t.body,
           r.tip_followed_computed_at IS NOT NULL
      FROM ctxgraph.tip_retrievals AS r
      JOIN ctxgraph.tips AS t ON t.skill = r.skill AND t.id = r.tip_id
      LEFT JOIN ctxgraph.attempts AS a ON a.skill = r.skill AND a.id = r.attempt_id
      LEFT JOIN ctxgraph.retrieval_scores AS s ON s.skill = r.skill AND s.retrieval_id = r.id
     WHERE r.skill = scoring_candidates.skill AND r.run_id = scoring_candidates.run_id
       AND (r.tip_followed_computed_at IS NULL
            OR s.llm_status = ANY (scoring_candidates.rescore) OR s.emb_status = ANY (scoring_candidates.rescore))
     ORDER BY r.id;
END
$$;

COMMENT ON FUNCTION ctxgraph.scoring_candidates(text, text, text[]) IS
    'The run''s retrievals a scoring pass would score: unscored ones, and stamped ones whose judge or embedding status is one of rescore. Raises P0002 for an unknown run, 22023 for an unknown reason.';

CREATE FUNCTION ctxgraph.claim_scoring_batch(skill text, run_id text, pass_id uuid, batch_size integer,
                                             exclude bigint[] DEFAULT '{}', rescore text[] DEFAULT '{}')
RETURNS TABLE (retrieval_id bigint, rule_id text, attempt_id bigint, attempt_number integer,
               retrieved_at timestamptz, tip_id bigint, tip_body text, stamped boolean)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    lease_for interval;
    -- One instant for the whole claim: two clock_timestamp() calls would give a lease a few
    -- microseconds more or less than scoring.lease_seconds.
    claimed_at timestamptz;
BEGIN
    PERFORM ctxgraph._require_scoring_pass(claim_scoring_batch.pass_id);
    IF claim_scoring_batch.batch_size IS NULL OR claim_scoring_batch.exclude IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: claim_scoring_batch needs a batch size and a (possibly empty) exclude array'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF claim_scoring_batch.batch_size < 1 THEN
        RAISE EXCEPTION 'ctxgraph: batch_size must be at least 1, not %', claim_scoring_batch.batch_size
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    lease_for := make_interval(secs => ctxgraph.param('scoring.lease_seconds'));
    claimed_at := clock_timestamp();
    RETURN QUERY
    WITH live AS MATERIALIZED (
        SELECT p.pid FROM ctxgraph._live_scoring_passes() AS p (pid)
    ), wanted AS MATERIALIZED (
        SELECT c.*
          FROM ctxgraph.scoring_candidates(claim_scoring_batch.skill, claim_scoring_batch.run_id,
                                           claim_scoring_batch.rescore) AS c
         WHERE c.retrieval_id <> ALL (claim_scoring_batch.exclude)
           AND NOT EXISTS (SELECT 1 FROM ctxgraph.scoring_leases AS l
                            WHERE l.skill = claim_scoring_batch.skill AND l.retrieval_id = c.retrieval_id
                              AND l.expires_at > claimed_at AND l.owner_pid IN (SELECT pid FROM live))
         ORDER BY c.retrieval_id
         LIMIT claim_scoring_batch.batch_size
    ), leased AS (
        -- A concurrent claim of the same row waits here for the other's (short) claim to commit,
        -- then finds its lease live and takes nothing: no row has two live leases.
        INSERT INTO ctxgraph.scoring_leases AS l (skill, retrieval_id, pass_id, owner_pid, rescore, leased_at, expires_at)
        SELECT claim_scoring_batch.skill, w.retrieval_id, claim_scoring_batch.pass_id, pg_backend_pid(), w.stamped,
               claimed_at, claimed_at + lease_for
          FROM wanted AS w
         ORDER BY w.retrieval_id
        ON CONFLICT (skill, retrieval_id) DO UPDATE
           SET pass_id = excluded.pass_id, owner_pid = excluded.owner_pid, rescore = excluded.rescore,
               leased_at = excluded.leased_at, expires_at = excluded.expires_at
         WHERE l.expires_at <= claimed_at OR l.owner_pid NOT IN (SELECT pid FROM live)
        RETURNING l.retrieval_id
    )
    SELECT w.retrieval_id, w.rule_id, w.attempt_id, w.attempt_number, w.retrieved_at, w.tip_id,
           w.tip_body, w.stamped
      FROM wanted AS w
      JOIN leased AS d ON d.retrieval_id = w.retrieval_id
     ORDER BY w.retrieval_id;
END
$$;

COMMENT ON FUNCTION ctxgraph.claim_scoring_batch(text, text, uuid, integer, bigint[], text[]) IS
    'Leases up to batch_size of the run''s scoring candidates that no live pass holds an unexpired lease on, to this pass, and returns them; locks no retrieval row. exclude: rows this pass already tried.';

CREATE FUNCTION ctxgraph.write_scoring_results(skill text, pass_id uuid, scores jsonb)
RETURNS TABLE (retrieval_id bigint, outcome text, retry_reason text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    problem             text;
    caller_lock_timeout text := current_setting('lock_timeout');
BEGIN
    -- The results table is this function's own: one the caller made first is refused.
    PERFORM ctxgraph._refuse_foreign_temp_objects('scoring_results');
    PERFORM ctxgraph._require_skill(write_scoring_results.skill);
    PERFORM ctxgraph._require_scoring_pass(write_scoring_results.pass_id);
    IF write_scoring_results.scores IS NULL OR jsonb_typeof(write_scoring_results.scores) <> 'array' THEN
        RAISE EXCEPTION 'ctxgraph: scores must be a JSON array of objects' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    CREATE TEMP TABLE IF NOT EXISTS pg_temp.scoring_results (
        retrieval_id bigint, llm boolean, emb double precision, follow_probability double precision,
        llm_status text, emb_status text, judge_model text, prompt_sha256 text, embed_model text,
        embed_mode text, script_sha256 text, signal_status text, calibration_id bigint, signal_version text,
        follow_evidence jsonb, final boolean, retry_reason text, outcome text
    ) ON COMMIT DELETE ROWS;
    TRUNCATE pg_temp.scoring_results;
    INSERT INTO pg_temp.scoring_results
    SELECT v.*, (sj.final AND se.final),
           CASE WHEN NOT sj.final THEN v.llm_status WHEN NOT se.final THEN v.emb_status END, NULL
      FROM jsonb_to_recordset(write_scoring_results.scores) AS v (
               retrieval_id bigint, llm boolean, emb double precision, follow_probability double precision,
               llm_status text, emb_status text, judge_model text, prompt_sha256 text, embed_model text,
               embed_mode text, script_sha256 text, signal_status text, calibration_id bigint,
               signal_version text, follow_evidence jsonb)
      LEFT JOIN ctxgraph.scoring_statuses AS sj ON sj.leg = 'judge' AND sj.status = v.llm_status
      LEFT JOIN ctxgraph.scoring_statuses AS se ON se.leg = 'embedding' AND se.status = v.emb_status;
    SELECT CASE
               WHEN count(*) FILTER (WHERE r.retrieval_id IS NULL) > 0 THEN 'a result without retrieval_id'
               WHEN count(DISTINCT r.retrieval_id) <> count(*) THEN 'a retrieval twice'
               WHEN count(*) FILTER (WHERE r.final IS NULL) > 0 THEN
                   'unknown status ' || string_agg(DISTINCT r.llm_status || '/' || r.emb_status, ', ')
                                        FILTER (WHERE r.final IS NULL)
                   || ' (judge/embedding; see ctxgraph.scoring_statuses)'
           END
      INTO problem
      FROM pg_temp.scoring_results AS r;
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'ctxgraph: write_scoring_results got %', problem USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- Bounded waits from here on: the pass yields to writers instead of queueing behind them.
    PERFORM set_config('lock_timeout', (ctxgraph.param('scoring.write_lock_timeout_ms'))::bigint::text || 'ms', true);
    BEGIN
        -- This pass's leases, locked (only a concurrent claim contends for them), so a lease cannot
        -- pass to another pass between this check and the write; a lease taken over meanwhile no
        -- longer names this pass once the lock is granted, and the row is 'not_leased'.
        WITH mine AS (
            SELECT l.retrieval_id FROM ctxgraph.scoring_leases AS l
             WHERE l.skill = write_scoring_results.skill AND l.pass_id = write_scoring_results.pass_id
               AND l.retrieval_id IN (SELECT x.retrieval_id FROM pg_temp.scoring_results AS x)
             ORDER BY l.retrieval_id
               FOR UPDATE
        )
        UPDATE pg_temp.scoring_results AS r SET outcome = 'not_leased'
         WHERE r.retrieval_id NOT IN (SELECT m.retrieval_id FROM mine AS m);
        -- The retrieval rows, in id order, skipping those a writer holds right now ('busy').
        UPDATE pg_temp.scoring_results AS r
           SET outcome = CASE
                   WHEN k.id IS NULL THEN 'busy'
                   WHEN k.stamped AND NOT k.rescore THEN 'already_scored'
                   WHEN k.rescore AND NOT r.final THEN 'kept'
                   WHEN r.final THEN 'stamped'
                   ELSE 'left_unscored'
               END
          FROM (SELECT x.retrieval_id, t.id, t.stamped, l.rescore
                  FROM pg_temp.scoring_results AS x
                  JOIN ctxgraph.scoring_leases AS l
                    ON l.skill = write_scoring_results.skill AND l.retrieval_id = x.retrieval_id
                   AND l.pass_id = write_scoring_results.pass_id
                  LEFT JOIN (SELECT tr.id, tr.tip_followed_computed_at IS NOT NULL AS stamped
                               FROM ctxgraph.tip_retrievals AS tr
                              WHERE tr.skill = write_scoring_results.skill
                                AND tr.id IN (SELECT y.retrieval_id FROM pg_temp.scoring_results AS y
                                               WHERE y.outcome IS NULL)
                              ORDER BY tr.id
                                FOR NO KEY UPDATE OF tr SKIP LOCKED) AS t ON t.id = x.retrieval_id
                 WHERE x.outcome IS NULL) AS k
         WHERE r.retrieval_id = k.retrieval_id;

        UPDATE ctxgraph.tip_retrievals AS t
           SET tip_followed_llm = r.llm,
               tip_followed_emb = r.emb,
               follow_probability = r.follow_probability,
               tip_followed_computed_at = CASE WHEN r.final THEN clock_timestamp() END
          FROM pg_temp.scoring_results AS r
         WHERE t.skill = write_scoring_results.skill AND t.id = r.retrieval_id
           AND r.outcome IN ('stamped', 'left_unscored');

        INSERT INTO ctxgraph.retrieval_scores AS s
               (skill, retrieval_id, llm_status, emb_status, judge_model, prompt_sha256, embed_model, embed_mode,
                script_sha256, signal_status, calibration_id, signal_version, follow_evidence, scored_at)
        SELECT write_scoring_results.skill, r.retrieval_id, r.llm_status, r.emb_status, r.judge_model,
               r.prompt_sha256, r.embed_model, r.embed_mode, r.script_sha256, r.signal_status, r.calibration_id,
               r.signal_version, r.follow_evidence, clock_timestamp()
          FROM pg_temp.scoring_results AS r
         WHERE r.outcome IN ('stamped', 'left_unscored')
         ORDER BY r.retrieval_id
        ON CONFLICT (skill, retrieval_id) DO UPDATE
           SET llm_status = excluded.llm_status, emb_status = excluded.emb_status,
               judge_model = excluded.judge_model, prompt_sha256 = excluded.prompt_sha256,
               embed_model = excluded.embed_model, embed_mode = excluded.embed_mode,
               script_sha256 = excluded.script_sha256, signal_status = excluded.signal_status,
               calibration_id = excluded.calibration_id, signal_version = excluded.signal_version,
               follow_evidence = excluded.follow_evidence, scored_at = excluded.scored_at;

        DELETE FROM ctxgraph.scoring_leases AS l
         USING pg_temp.scoring_results AS r
         WHERE l.skill = write_scoring_results.skill AND l.retrieval_id = r.retrieval_id
           AND l.pass_id = write_scoring_results.pass_id AND r.outcome <> 'busy';
    EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
        -- Everything above is undone; the leases stand, the pass writes these rows again shortly.
        UPDATE pg_temp.scoring_results AS r SET outcome = 'busy' WHERE r.outcome IS DISTINCT FROM 'not_leased';
    END;
    PERFORM set_config('lock_timeout', caller_lock_timeout, true);
    RETURN QUERY SELECT r.retrieval_id, r.outcome, r.retry_reason
                   FROM pg_temp.scoring_results AS r ORDER BY r.retrieval_id;
END
$$;

COMMENT ON FUNCTION ctxgraph.write_scoring_results(text, uuid, jsonb) IS
    'Writes a group of a pass''s results: for each row still leased to the pass, stamped if both legs'' statuses are final (ctxgraph.scoring_statuses), left unscored otherwise; a re-scored row is written only when the new result is final. Returns per row stamped, left_unscored, kept, already_scored, not_leased or busy (a writer held a lock: retry), and the status that was not final.';

REVOKE ALL ON FUNCTION ctxgraph._scoring_pass_lock_class(), ctxgraph._live_scoring_passes(),
    ctxgraph._require_scoring_pass(uuid), ctxgraph.begin_scoring_pass(), ctxgraph.end_scoring_pass(text, uuid),
    ctxgraph.renew_scoring_leases(text, uuid), ctxgraph.scoring_candidates(text, text, text[]),
    ctxgraph.claim_scoring_batch(text, text, uuid, integer, bigint[], text[]),
    ctxgraph.write_scoring_results(text, uuid, jsonb) FROM PUBLIC;
DO $$
BEGIN
    PERFORM ctxgraph._grant('EXECUTE ON FUNCTION ctxgraph.begin_scoring_pass(), ctxgraph.end_scoring_pass(text, uuid), '
                            'ctxgraph.renew_scoring_leases(text, uuid), ctxgraph.scoring_candidates(text, text, text[]), '
                            'ctxgraph.claim_scoring_batch(text, text, uuid, integer, bigint[], text[]), '
                            'ctxgraph.write_scoring_results(text, uuid, jsonb)', '{scorer}');
    PERFORM ctxgraph._grant('SELECT ON ctxgraph.scoring_statuses', '{scorer,analyst}');
    PERFORM ctxgraph._grant('SELECT ON ctxgraph.scoring_leases', '{scorer,analyst}');
END
$$;

COMMIT;
