-- Deploy ctxgraph:function_fit_io to pg
-- requires: function_ensure_tip_effects
-- requires: table_tip_stats
-- requires: table_group_roles

-- The attribution fit runs in the ctxgraph package (ctxgraph.fit, numpy), not in PL/pgSQL: it
-- reads a skill's evidence in one snapshot, fits the effects and the blame, and writes one row per
-- tip of the skill. Its role (the scorer, which runs it at the end of a pass; an operator runs it
-- as the owner) reads no log table itself: four owner-run functions give the fit what it needs.
--
--   fit_snapshot(skill)  the skill's rules and runs in text order (the codes fit_evidence uses),
--                        its tips with their evidence versions, the attempts that broke the system,
--                        the evidence fingerprint and the effects.* and blame.* parameters; called in
--                        the same REPEATABLE READ snapshot as fit_evidence, so it stamps exactly the
--                        evidence the fit reads;
--   fit_evidence(skill, as_of)  every scored retrieval up to as_of as fixed-width numbers (the rule
--                        and run as codes, a NULL as NaN or -1), so the fit reads it with one binary
--                        COPY and one numpy.frombuffer, not a Python object per row;
--   tip_fit_staging()   makes this session's staging table as the owner (or empties it) and lets
--                       the fit's roles INSERT into it, which COPY needs, and nothing else;
--   write_tip_fit(...)  checks the staged rows (every tip of the skill exactly once, numbers finite,
--                       an effect exactly where there was evidence) and replaces the skill's rows of
--                       ctxgraph.tip_effects with them in one statement pair, stamped with the instant,
--                       the evidence fingerprint and the parameters the fit read, and records the fit
--                       in ctxgraph.tip_effect_fits; bad rows: 22023 and nothing written.
--
-- Each row also keeps the tip's own tip_stats.evidence_version as the fit read it, so a later
-- reader can tell which tips' evidence changed since (the fit's staleness, an incremental refit).
BEGIN;

ALTER TABLE ctxgraph.tip_effects ADD COLUMN evidence_version bigint;
COMMENT ON COLUMN ctxgraph.tip_effects.evidence_version IS
    'The tip''s tip_stats.evidence_version when the fit read its evidence (0 for a tip with none yet); NULL for rows written by refresh_tip_effects.';

CREATE FUNCTION ctxgraph.fit_snapshot(skill text)
RETURNS TABLE (rules text[], runs text[], tips bigint[], tip_versions bigint[], harmful_attempts bigint[],
               evidence_version numeric, parameters jsonb)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM ctxgraph._require_skill(fit_snapshot.skill);
    RETURN QUERY
    SELECT (SELECT coalesce(array_agg(rs.rule_id ORDER BY rs.rule_id), '{}') FROM ctxgraph.rule_stats AS rs
             WHERE rs.skill = fit_snapshot.skill),
           (SELECT coalesce(array_agg(r.id ORDER BY r.id), '{}') FROM ctxgraph.runs AS r WHERE r.skill = fit_snapshot.skill),
           (SELECT coalesce(array_agg(t.id ORDER BY t.id), '{}') FROM ctxgraph.tips AS t WHERE t.skill = fit_snapshot.skill),
           (SELECT coalesce(array_agg(coalesce(s.evidence_version, 0) ORDER BY t.id), '{}')
              FROM ctxgraph.tips AS t
              LEFT JOIN ctxgraph.tip_stats AS s ON s.skill = t.skill AND s.tip_id = t.id
             WHERE t.skill = fit_snapshot.skill),
           (SELECT coalesce(array_agg(a.attempt_key ORDER BY a.attempt_key), '{}') FROM ctxgraph.rule_attempt_stats AS a
             WHERE a.skill = fit_snapshot.skill AND a.harmful),
           fp.evidence_version, fp.parameters
      FROM ctxgraph._tip_effects_fingerprint(fit_snapshot.skill) AS fp;
END
$$;

COMMENT ON FUNCTION ctxgraph.fit_snapshot(text) IS
    'What the attribution fit of a skill reads besides its rows: its rules and runs in text order (fit_evidence''s codes), its tips and their tip_stats.evidence_version, the attempts that broke the system, the evidence fingerprint and the effects.* and blame.* parameters. Call it in the same REPEATABLE READ transaction as fit_evidence.';

CREATE FUNCTION ctxgraph.fit_evidence(skill text, as_of timestamptz)
RETURNS TABLE (tip_id bigint, attempt_key bigint, rule_code integer, run_code integer, follow_weight double precision,
               credit double precision, follow_source smallint, followed smallint, follow_probability double precision,
               cosine double precision)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM ctxgraph._require_skill(fit_evidence.skill);
    IF fit_evidence.as_of IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: fit_evidence needs as_of' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT pg_catalog.isfinite(fit_evidence.as_of) THEN
        RAISE EXCEPTION 'ctxgraph: fit_evidence needs a finite as_of, got %', fit_evidence.as_of
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Codes are 1-based positions in fit_snapshot's lists; -1 marks a rule or run the maintained
    -- levels do not know (the fit refuses to go on: they are out of date).
    RETURN QUERY
    SELECT s.tip_id, s.attempt_key, coalesce(rc.code, -1)::integer, coalesce(uc.code, -1)::integer,
           s.follow_weight, s.credit,
           CASE s.follow_source WHEN 'judge' THEN 1 WHEN 'embedding' THEN 2 WHEN 'signal' THEN 3 ELSE 0 END::smallint,
           CASE WHEN s.followed THEN 1 WHEN NOT s.followed THEN 0 ELSE -1 END::smallint,
           coalesce(s.follow_probability, 'NaN'), coalesce(s.cosine, 'NaN')
      FROM ctxgraph.scored_retrievals AS s
      LEFT JOIN (SELECT rs.rule_id, row_number() OVER (ORDER BY rs.rule_id) AS code
                   FROM ctxgraph.rule_stats AS rs WHERE rs.skill = fit_evidence.skill) AS rc ON rc.rule_id = s.rule_id
      LEFT JOIN (SELECT r.id, row_number() OVER (ORDER BY r.id) AS code
                   FROM ctxgraph.runs AS r WHERE r.skill = fit_evidence.skill) AS uc ON uc.id = s.run_id
     WHERE s.skill = fit_evidence.skill AND s.retrieved_at <= fit_evidence.as_of;
END
$$;

COMMENT ON FUNCTION ctxgraph.fit_evidence(text, timestamptz) IS
    'Every scored retrieval of the skill up to as_of as the attribution fit reads it, all fixed-width: tip, attempt key, rule and run codes (positions in fit_snapshot''s lists), follow weight, credit, follow source (0 none, 1 judge, 2 embedding, 3 signal), verdict (-1 none, 0 ignored, 1 followed), follow probability and cosine (NaN for none). Read it with COPY (FORMAT binary).';

CREATE FUNCTION ctxgraph.tip_fit_staging()
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
BEGIN
    -- A staging table the caller made itself is refused, never emptied or reused: its triggers
    -- would run with the owner's rights (_refuse_foreign_temp_objects).
    PERFORM ctxgraph._refuse_foreign_temp_objects('ctxgraph_tip_fit');
    IF to_regclass('pg_temp.ctxgraph_tip_fit') IS NULL THEN
        CREATE TEMPORARY TABLE ctxgraph_tip_fit (
            tip_id                 bigint NOT NULL,
            effect                 double precision,
            std_error              double precision,
            lower_bound            double precision,
            upper_bound            double precision,
            attempts               bigint NOT NULL,
            followed_attempts      double precision NOT NULL,
            co_followed_tips       integer,
            component_tips         integer,
            method                 text NOT NULL,
            misleading_probability double precision,
            evidence_version       bigint NOT NULL
        );
        PERFORM ctxgraph._grant('INSERT ON pg_temp.ctxgraph_tip_fit', '{scorer}');
    ELSE
        TRUNCATE pg_temp.ctxgraph_tip_fit;
    END IF;
    RETURN 'pg_temp.ctxgraph_tip_fit';
END
$$;

COMMENT ON FUNCTION ctxgraph.tip_fit_staging() IS
    'Makes (or empties) this session''s staging table for a fit''s rows, pg_temp.ctxgraph_tip_fit, which the scorer may only INSERT into (COPY); returns its name. write_tip_fit reads it.';

CREATE FUNCTION ctxgraph.write_tip_fit(skill text, as_of timestamptz, evidence_version numeric, parameters jsonb,
                                       fit_parameters jsonb)
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    problem text;
    fitted  integer;
BEGIN
    PERFORM ctxgraph._refuse_foreign_temp_objects('ctxgraph_tip_fit');
    PERFORM ctxgraph._require_skill(write_tip_fit.skill);
    IF write_tip_fit.as_of IS NULL OR write_tip_fit.evidence_version IS NULL OR write_tip_fit.parameters IS NULL
       OR write_tip_fit.fit_parameters IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: write_tip_fit needs as_of, evidence_version, parameters and fit_parameters'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT pg_catalog.isfinite(write_tip_fit.as_of) THEN
        RAISE EXCEPTION 'ctxgraph: write_tip_fit needs a finite as_of, got %', write_tip_fit.as_of
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.jsonb_typeof(write_tip_fit.parameters) <> 'object' OR pg_catalog.jsonb_typeof(write_tip_fit.fit_parameters) <> 'object' THEN
        RAISE EXCEPTION 'ctxgraph: write_tip_fit''s parameters and fit_parameters must be JSON objects'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF to_regclass('pg_temp.ctxgraph_tip_fit') IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: no staged fit in this session: call ctxgraph.tip_fit_staging() and COPY the rows first'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- One fit of a skill written at a time (the lock the released refresh_tip_effects took).
    PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('ctxgraph.refresh_tip_effects'),
                                             pg_catalog.hashtext(write_tip_fit.skill));
    -- Statistics for the checks below: without them a staged fit of 10,000 tips was matched against
    -- the skill's tips by a nested loop (3.4 s).
    ANALYZE pg_temp.ctxgraph_tip_fit;
    SELECT p.problem INTO problem
      FROM (SELECT format('tip %s is staged %s times', s.tip_id, count(*)) AS problem, 1 AS k, s.tip_id
              FROM pg_temp.ctxgraph_tip_fit AS s GROUP BY s.tip_id HAVING count(*) > 1
            UNION ALL
            SELECT format('tip %s is not a %s tip', s.tip_id, write_tip_fit.skill), 2, s.tip_id
              FROM pg_temp.ctxgraph_tip_fit AS s
             WHERE NOT EXISTS (SELECT 1 FROM ctxgraph.tips AS t WHERE t.skill = write_tip_fit.skill AND t.id = s.tip_id)
            UNION ALL
            SELECT format('tip %s of %s has no staged row', t.id, write_tip_fit.skill), 3, t.id
              FROM ctxgraph.tips AS t
             WHERE t.skill = write_tip_fit.skill
               AND NOT EXISTS (SELECT 1 FROM pg_temp.ctxgraph_tip_fit AS s WHERE s.tip_id = t.id)
            UNION ALL
            SELECT format('tip %s: %s', s.tip_id, c.what), 4, s.tip_id
              FROM pg_temp.ctxgraph_tip_fit AS s
             CROSS JOIN LATERAL (SELECT CASE
                 WHEN s.method NOT IN ('exact', 'blockwise', 'no_evidence') THEN format('unknown method %L', s.method)
                 WHEN s.method = 'no_evidence' AND num_nonnulls(s.effect, s.std_error, s.lower_bound, s.upper_bound,
                                                                s.co_followed_tips, s.component_tips, s.misleading_probability) > 0
                     THEN 'a tip with no evidence has no effect, std error, bounds, groups or misleading probability'
                 WHEN s.method <> 'no_evidence' AND num_nulls(s.effect, s.std_error, s.lower_bound, s.upper_bound,
                                                              s.co_followed_tips, s.component_tips) > 0
                     THEN 'a tip with evidence needs its effect, std error, bounds and groups'
                 -- Log-odds far past any fit's (a ridge keeps them small): a larger number only
                 -- overflows the readers' arithmetic (effect + z * std error).
                 WHEN s.method <> 'no_evidence'
                      AND NOT (abs(s.effect) <= 1e6 AND s.std_error >= 0 AND s.std_error <= 1e6
                               AND s.lower_bound <= s.effect AND s.effect <= s.upper_bound
                               AND abs(s.lower_bound) <= 1e7 AND abs(s.upper_bound) <= 1e7)
                     THEN 'the effect and its std error must be finite and at most 1e6, its bounds around it and at most 1e7'
                 WHEN s.method <> 'no_evidence' AND NOT (s.co_followed_tips >= 1 AND s.component_tips >= 1)
                     THEN 'co_followed_tips and component_tips count tips: at least 1'
                 WHEN NOT (s.misleading_probability IS NULL OR s.misleading_probability BETWEEN 0 AND 1)
                     THEN 'misleading_probability must be in [0, 1]'
                 WHEN s.attempts < 0 OR NOT (s.followed_attempts BETWEEN 0 AND s.attempts) OR s.evidence_version < 0
                     THEN 'attempts, followed_attempts and evidence_version must be counts (followed at most attempts)'
                 WHEN s.evidence_version > coalesce((SELECT st.evidence_version FROM ctxgraph.tip_stats AS st
                                                      WHERE st.skill = write_tip_fit.skill AND st.tip_id = s.tip_id), 0)
                     THEN 'evidence_version is later than the tip''s own: no fit has seen that evidence'
                 END AS what) AS c
             WHERE c.what IS NOT NULL) AS p
     ORDER BY p.k, p.tip_id
     LIMIT 1;
    -- The stamp must be the evidence the staged rows say they saw: the fingerprint of their
    -- evidence versions (a fit that claims the current fingerprint has staged the current versions).
    IF problem IS NULL AND write_tip_fit.evidence_version
           <> (SELECT coalesce(sum(pg_catalog.hashtextextended(s.tip_id || ':' || s.evidence_version, 0)::numeric), 0)
                 FROM pg_temp.ctxgraph_tip_fit AS s
                WHERE EXISTS (SELECT 1 FROM ctxgraph.tip_stats AS st
                               WHERE st.skill = write_tip_fit.skill AND st.tip_id = s.tip_id)) THEN
        problem := 'evidence_version is not the fingerprint of the staged rows'' evidence versions';
    END IF;
    IF problem IS NULL AND pg_catalog.pg_column_size(write_tip_fit.fit_parameters) > 65536 THEN
        problem := 'fit_parameters is larger than 64 kB (every tip''s row keeps a copy)';
    END IF;
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'ctxgraph: the staged fit of % is refused: %', write_tip_fit.skill, problem
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Nothing was written; ctxgraph.tip_effects still holds the last fit.';
    END IF;
    -- Every tip of the skill is staged, so an upsert replaces the whole fit. Not a DELETE and an
    -- INSERT: each inserted row checks its key into the partitioned ctxgraph.tips, 0.3 ms a row (3.1 s
    -- for 10,000 tips), and an update that keeps the key checks nothing.
    INSERT INTO ctxgraph.tip_effects (skill, tip_id, effect, std_error, lower_bound, upper_bound, attempts,
                                      followed_attempts, co_followed_tips, component_tips, method, fitted_at,
                                      as_of, parameters, misleading_probability, evidence_version)
    SELECT write_tip_fit.skill, s.tip_id, s.effect, s.std_error, s.lower_bound, s.upper_bound, s.attempts,
           s.followed_attempts, s.co_followed_tips, s.component_tips, s.method, now(), write_tip_fit.as_of,
           write_tip_fit.fit_parameters, s.misleading_probability, s.evidence_version
      FROM pg_temp.ctxgraph_tip_fit AS s
    -- At REPEATABLE READ a fit committed after this transaction's snapshot is invisible to it, and
    -- updating its rows fails with 40001, the error such a caller retries.
    ON CONFLICT (skill, tip_id) DO UPDATE
       SET (effect, std_error, lower_bound, upper_bound, attempts, followed_attempts, co_followed_tips,
            component_tips, method, fitted_at, as_of, parameters, misleading_probability, evidence_version)
         = (excluded.effect, excluded.std_error, excluded.lower_bound, excluded.upper_bound, excluded.attempts,
            excluded.followed_attempts, excluded.co_followed_tips, excluded.component_tips, excluded.method,
            excluded.fitted_at, excluded.as_of, excluded.parameters, excluded.misleading_probability,
            excluded.evidence_version);
    INSERT INTO ctxgraph.tip_effect_fits (skill, evidence_version, as_of, parameters, fitted_at)
    VALUES (write_tip_fit.skill, write_tip_fit.evidence_version, write_tip_fit.as_of, write_tip_fit.parameters, now())
    ON CONFLICT (skill) DO UPDATE
       SET (evidence_version, as_of, parameters, fitted_at)
         = (excluded.evidence_version, excluded.as_of, excluded.parameters, excluded.fitted_at);
    SELECT count(*) INTO fitted FROM pg_temp.ctxgraph_tip_fit AS s WHERE s.method <> 'no_evidence';
    TRUNCATE pg_temp.ctxgraph_tip_fit;
    RETURN fitted;
END
$$;

COMMENT ON FUNCTION ctxgraph.write_tip_fit(text, timestamptz, numeric, jsonb, jsonb) IS
    'Replaces the skill''s rows of ctxgraph.tip_effects with the fit staged in pg_temp.ctxgraph_tip_fit (every tip of the skill exactly once; 22023 and nothing written otherwise), stamped with as_of and fit_parameters, and records the fit''s evidence fingerprint and parameters in ctxgraph.tip_effect_fits; returns the tips with evidence.';

REVOKE ALL ON FUNCTION ctxgraph.fit_snapshot(text), ctxgraph.fit_evidence(text, timestamptz), ctxgraph.tip_fit_staging(),
    ctxgraph.write_tip_fit(text, timestamptz, numeric, jsonb, jsonb) FROM PUBLIC;
DO $$
BEGIN
    -- The scorer only: it runs the fit at the end of a pass. The writer (the agent), which may retire
    -- tips with evict_tips, must not also choose the fit evict_tips decides on.
    PERFORM ctxgraph._grant('EXECUTE ON FUNCTION ctxgraph.fit_snapshot(text)', '{scorer}');
    PERFORM ctxgraph._grant('EXECUTE ON FUNCTION ctxgraph.fit_evidence(text, timestamptz)', '{scorer}');
    PERFORM ctxgraph._grant('EXECUTE ON FUNCTION ctxgraph.tip_fit_staging()', '{scorer}');
    PERFORM ctxgraph._grant('EXECUTE ON FUNCTION ctxgraph.write_tip_fit(text, timestamptz, numeric, jsonb, jsonb)', '{scorer}');
END
$$;

COMMIT;
