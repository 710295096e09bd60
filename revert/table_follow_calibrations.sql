-- Revert ctxgraph:table_follow_calibrations from pg

-- Back to @v0.5.0: the latest saved calibration is in force, cross-validated or not.
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph.current_follow_calibration(skill text, signal_version text)
RETURNS SETOF ctxgraph.follow_calibrations
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_column
BEGIN
    PERFORM ctxgraph._require_skill(current_follow_calibration.skill);
    IF current_follow_calibration.signal_version IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: current_follow_calibration needs a signal_version' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    RETURN QUERY
    SELECT c.*
      FROM ctxgraph.follow_calibrations AS c
     WHERE c.skill = current_follow_calibration.skill AND c.signal_version = current_follow_calibration.signal_version
     ORDER BY c.fitted_at DESC, c.calibration_id DESC
     LIMIT 1;
END
$$;

COMMENT ON FUNCTION ctxgraph.current_follow_calibration(text, text) IS
    'The latest saved follow calibration of a skill and signal version (by fitted_at, then calibration_id); no row when none; raises 22004 for NULL arguments and 22023 for an unknown skill.';

COMMIT;
