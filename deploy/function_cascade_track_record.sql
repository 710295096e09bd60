-- Deploy ctxgraph:function_cascade_track_record to pg
-- requires: column_follow_probability
-- requires: scoring_leases
-- requires: table_group_roles
-- requires: privileges_functions

-- The judge cascade decides rows outside its band by the calibrated probability, and checks a
-- share of them with the judge anyway; when the checked rows disagree with the judge more than the
-- band promised, the pass stops trusting it. That evidence used to start from nothing on every
-- pass, so each pass paid its first checks again, and a band that had failed on one run was
-- trusted afresh on the next. cascade_track_record gives the pass the evidence the skill's earlier
-- runs already hold: for one calibration, signal version and judge model, how many distinct
-- questions (tip, script) had a probability, how many lay outside the band, how many of those the
-- judge answered, and on how many of those the probability's side of 0.5 disagreed with it.
-- Rows answered by another judge model, or whose verdict came from elsewhere than the pass's
-- judge (llm_status not 'judged'), are not evidence about this judge.
BEGIN;

CREATE FUNCTION ctxgraph.cascade_track_record(
    skill          text,
    calibration_id bigint,
    signal_version text,
    judge_model    text,
    band_low       double precision,
    band_high      double precision,
    other_than_run text DEFAULT NULL)
RETURNS TABLE (questions bigint, outside_band bigint, checked bigint, disagreed bigint)
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_column
DECLARE
    want_skill    text := cascade_track_record.skill;
    want_fit      bigint := cascade_track_record.calibration_id;
    want_version  text := cascade_track_record.signal_version;
    want_judge    text := cascade_track_record.judge_model;
    low           double precision := cascade_track_record.band_low;
    high          double precision := cascade_track_record.band_high;
    skipped_run   text := cascade_track_record.other_than_run;
BEGIN
    PERFORM ctxgraph._require_skill(want_skill);
    IF want_version IS NULL OR want_judge IS NULL OR low IS NULL OR high IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: cascade_track_record needs a signal_version, a judge_model and both ends of the band'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- NaN compares above every number, so the range test alone would let it through.
    IF low = 'NaN' OR high = 'NaN' OR NOT (0 <= low AND low <= high AND high <= 1) THEN
        RAISE EXCEPTION 'ctxgraph: the cascade band [%, %] is not a range inside [0, 1]', low, high
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    WITH question AS (
        -- One row per distinct question, as the pass counts them; where a question was scored
        -- more than once, a verdict of this judge is preferred.
        SELECT DISTINCT ON (r.tip_id, s.script_sha256)
               r.follow_probability AS p,
               r.follow_probability < low OR r.follow_probability > high AS outside,
               CASE WHEN s.llm_status = 'judged' AND s.judge_model = want_judge THEN r.tip_followed_llm END AS verdict
          FROM ctxgraph.tip_retrievals AS r
          JOIN ctxgraph.retrieval_scores AS s ON s.skill = r.skill AND s.retrieval_id = r.id
         WHERE r.skill = want_skill
           AND r.follow_probability IS NOT NULL
           AND s.signal_version = want_version
           AND s.calibration_id IS NOT DISTINCT FROM want_fit
           AND r.run_id IS DISTINCT FROM skipped_run
         ORDER BY r.tip_id, s.script_sha256,
                  (s.llm_status = 'judged' AND s.judge_model = want_judge AND r.tip_followed_llm IS NOT NULL) DESC,
                  r.id
    )
    SELECT count(*),
           count(*) FILTER (WHERE q.outside),
           count(*) FILTER (WHERE q.outside AND q.verdict IS NOT NULL),
           count(*) FILTER (WHERE q.outside AND (q.p >= 0.5) <> q.verdict)
      FROM question AS q;
END
$$;

COMMENT ON FUNCTION ctxgraph.cascade_track_record(text, bigint, text, text, double precision, double precision, text) IS
    'The judge cascade''s evidence from a skill''s earlier runs, for one calibration (NULL: the package default), signal version and judge model: distinct questions (tip, script) with a follow probability, those outside the band [band_low, band_high], those of them the judge answered, and those on which the probability''s side of 0.5 disagreed with it; other_than_run leaves one run out. Raises 22004 for a NULL skill, version, judge model or band end, 22023 for an unknown skill or a band that is not a range inside [0, 1].';

REVOKE ALL ON FUNCTION ctxgraph.cascade_track_record(text, bigint, text, text, double precision, double precision, text)
    FROM PUBLIC;
DO $$
BEGIN
    PERFORM ctxgraph._grant('EXECUTE ON FUNCTION ctxgraph.cascade_track_record(text, bigint, text, text, '
                            'double precision, double precision, text)', '{scorer,analyst}');
END
$$;

COMMIT;
