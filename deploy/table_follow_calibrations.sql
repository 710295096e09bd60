-- Deploy ctxgraph:table_follow_calibrations to pg
-- requires: table_follow_calibrations@v0.5.0

-- Rework: only a calibration with its cross-validated figures is put in force. Released, the
-- latest saved calibration of a skill and signal version was the one in force whatever it held:
-- `ctxgraph calibrate` on one followed and one ignored label stored calibration 5 (no
-- cross-validated AUC), and the next pass used it without a word; the signal's accuracy against
-- the sample's gold labels fell from 0.835 to 0.669. The command now refuses too few labels and a
-- fit it cannot cross-validate; here current_follow_calibration passes over any calibration
-- without cv_auc, cv_accuracy and cv_folds (one saved before, or by another client), to the latest
-- one that has them, or to none (the scoring pass then uses its documented default). Such a row is
-- kept, for reading; save_follow_calibration still takes it.
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
       AND c.cv_auc IS NOT NULL AND c.cv_accuracy IS NOT NULL AND c.cv_folds IS NOT NULL
     ORDER BY c.fitted_at DESC, c.calibration_id DESC
     LIMIT 1;
END
$$;

COMMENT ON FUNCTION ctxgraph.current_follow_calibration(text, text) IS
    'The follow calibration in force for a skill and signal version: the latest saved (by fitted_at, then calibration_id) that carries its cross-validated figures (cv_auc, cv_accuracy, cv_folds); no row when none; raises 22004 for NULL arguments and 22023 for an unknown skill.';

COMMIT;
