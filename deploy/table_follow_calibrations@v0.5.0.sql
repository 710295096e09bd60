-- Deploy ctxgraph:table_follow_calibrations to pg
-- requires: table_skills
-- requires: table_group_roles
-- requires: privileges_functions
-- requires: function_graded_outcome

-- The calibrations behind follow_probability. The scoring pass turns a lexical and a cosine signal
-- into the probability that the script followed the tip with a logistic model fitted on judge
-- verdicts or on gold labels; each fit is a row here, so a probability in the log can always be
-- traced to the coefficients, the examples and the cross-validated quality that produced it, and
-- a refit never overwrites the fit older rows were scored with. The cascade band is the range of
-- probabilities inside which the signal is not trusted alone and the judge is still asked.
--
-- Rows are written only through save_follow_calibration (SECURITY DEFINER): it names what is wrong
-- with a fit (22023) before the CHECKs below, which hold the same rules for anyone else, refuse it.
-- NaN and the infinities are refused explicitly everywhere: NaN compares greater than every number
-- in PostgreSQL, so a one-sided bound such as ">= 0" lets it through.
BEGIN;

CREATE TABLE ctxgraph.follow_calibrations (
    calibration_id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    skill                    text NOT NULL REFERENCES ctxgraph.skills (name),
    signal_version           text NOT NULL CHECK (btrim(signal_version) <> ''),
    method                   text NOT NULL CHECK (method IN ('logistic')),
    feature_names            text[] NOT NULL,
    coefficients             double precision[] NOT NULL,
    intercept                double precision NOT NULL,
    fitted_on                text NOT NULL CHECK (fitted_on IN ('judge', 'labels')),
    source                   text NOT NULL CHECK (btrim(source) <> ''),
    examples                 integer NOT NULL CHECK (examples > 0),
    positives                integer NOT NULL,
    cv_auc                   double precision,
    cv_accuracy              double precision,
    cv_folds                 integer CHECK (cv_folds >= 2),
    cascade_low              double precision,
    cascade_high             double precision,
    cascade_max_disagreement double precision,
    fitted_at                timestamptz NOT NULL DEFAULT now(),
    -- retrieval_scores points at a calibration of its own skill.
    UNIQUE (skill, calibration_id),
    CONSTRAINT follow_calibrations_features CHECK (
        array_ndims(feature_names) = 1 AND cardinality(feature_names) > 0 AND array_position(feature_names, NULL) IS NULL
        AND NOT ('' = ANY (feature_names))),
    CONSTRAINT follow_calibrations_coefficients CHECK (
        array_ndims(coefficients) = 1 AND cardinality(coefficients) = cardinality(feature_names)
        AND array_position(coefficients, NULL) IS NULL
        AND NOT (coefficients && '{NaN,Infinity,-Infinity}'::double precision[])),
    CONSTRAINT follow_calibrations_intercept_finite CHECK (intercept NOT IN ('NaN', 'Infinity', '-Infinity')),
    CONSTRAINT follow_calibrations_positives CHECK (positives BETWEEN 0 AND examples),
    CONSTRAINT follow_calibrations_cv CHECK (
        (cv_auc IS NULL OR (cv_auc <> 'NaN' AND cv_auc BETWEEN 0 AND 1))
        AND (cv_accuracy IS NULL OR (cv_accuracy <> 'NaN' AND cv_accuracy BETWEEN 0 AND 1))
        AND (cv_folds IS NOT NULL OR (cv_auc IS NULL AND cv_accuracy IS NULL))),
    CONSTRAINT follow_calibrations_cascade CHECK (
        (cascade_low IS NULL) = (cascade_high IS NULL)
        AND (cascade_low IS NULL OR (cascade_low <> 'NaN' AND cascade_high <> 'NaN'
                                     AND 0 <= cascade_low AND cascade_low <= cascade_high AND cascade_high <= 1))
        AND (cascade_max_disagreement IS NULL
             OR (cascade_max_disagreement <> 'NaN' AND cascade_max_disagreement BETWEEN 0 AND 1)))
);

-- current_follow_calibration's lookup: the latest fit of one skill and signal version.
CREATE INDEX follow_calibrations_latest_idx
    ON ctxgraph.follow_calibrations (skill, signal_version, fitted_at DESC, calibration_id DESC);

COMMENT ON TABLE ctxgraph.follow_calibrations IS
    'Fitted calibrations of the follow probability: a logistic model from a signal''s features to the probability that the script followed the tip, per skill and signal version, with its provenance, cross-validated quality and cascade band. Written by ctxgraph.save_follow_calibration.';
COMMENT ON COLUMN ctxgraph.follow_calibrations.calibration_id IS 'The fit; retrieval_scores.calibration_id names the fit a probability came from.';
COMMENT ON COLUMN ctxgraph.follow_calibrations.skill IS 'The skill the fit is for.';
COMMENT ON COLUMN ctxgraph.follow_calibrations.signal_version IS 'The signal the features come from, e.g. lexical-1: a fit applies only to probabilities of that version.';
COMMENT ON COLUMN ctxgraph.follow_calibrations.method IS 'The model: logistic (probability = 1 / (1 + exp(-(intercept + sum of coefficient * feature)))).';
COMMENT ON COLUMN ctxgraph.follow_calibrations.feature_names IS 'The features in coefficient order.';
COMMENT ON COLUMN ctxgraph.follow_calibrations.coefficients IS 'One finite coefficient per feature, in the order of feature_names.';
COMMENT ON COLUMN ctxgraph.follow_calibrations.intercept IS 'The finite intercept on the log-odds scale.';
COMMENT ON COLUMN ctxgraph.follow_calibrations.fitted_on IS 'What the fit was trained on: judge (the LLM judge''s verdicts) or labels (gold labels).';
COMMENT ON COLUMN ctxgraph.follow_calibrations.source IS 'Exactly what it was trained on: the judge model and prompt sha256, or the label file''s path and sha256.';
COMMENT ON COLUMN ctxgraph.follow_calibrations.examples IS 'Training examples (retrievals with a verdict or label).';
COMMENT ON COLUMN ctxgraph.follow_calibrations.positives IS 'Examples that were followed.';
COMMENT ON COLUMN ctxgraph.follow_calibrations.cv_auc IS 'Cross-validated ROC AUC in [0, 1]; NULL when cross-validation was impossible (too few examples of a class).';
COMMENT ON COLUMN ctxgraph.follow_calibrations.cv_accuracy IS 'Cross-validated accuracy at probability 0.5, in [0, 1]; NULL when cross-validation was impossible.';
COMMENT ON COLUMN ctxgraph.follow_calibrations.cv_folds IS 'Folds of the cross-validation (at least 2); NULL when none ran.';
COMMENT ON COLUMN ctxgraph.follow_calibrations.cascade_low IS 'Lower end of the band of probabilities inside which the judge is still asked; NULL (with cascade_high) when there is no band.';
COMMENT ON COLUMN ctxgraph.follow_calibrations.cascade_high IS 'Upper end of that band, at least cascade_low.';
COMMENT ON COLUMN ctxgraph.follow_calibrations.cascade_max_disagreement IS 'The largest share of disagreement with the judge, in [0, 1], the band was chosen to keep outside it.';
COMMENT ON COLUMN ctxgraph.follow_calibrations.fitted_at IS 'When the fit was saved.';

-- save_follow_calibration: checks one fit, saves it, returns its id. Owner's rights: the scorer
-- saves fits but holds no INSERT on the table, so a row always passed these checks.
CREATE FUNCTION ctxgraph.save_follow_calibration(
    skill                    text,
    signal_version           text,
    method                   text,
    feature_names            text[],
    coefficients             double precision[],
    intercept                double precision,
    fitted_on                text,
    source                   text,
    examples                 integer,
    positives                integer,
    cv_auc                   double precision DEFAULT NULL,
    cv_accuracy              double precision DEFAULT NULL,
    cv_folds                 integer DEFAULT NULL,
    cascade_low              double precision DEFAULT NULL,
    cascade_high             double precision DEFAULT NULL,
    cascade_max_disagreement double precision DEFAULT NULL
)
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    not_finite constant double precision[] := '{NaN,Infinity,-Infinity}';
    saved      bigint;
BEGIN
    PERFORM ctxgraph._require_skill(save_follow_calibration.skill);
    IF save_follow_calibration.signal_version IS NULL OR save_follow_calibration.method IS NULL
       OR save_follow_calibration.feature_names IS NULL OR save_follow_calibration.coefficients IS NULL
       OR save_follow_calibration.intercept IS NULL OR save_follow_calibration.fitted_on IS NULL
       OR save_follow_calibration.source IS NULL OR save_follow_calibration.examples IS NULL
       OR save_follow_calibration.positives IS NULL THEN
        RAISE EXCEPTION 'ctxgraph: save_follow_calibration needs signal_version, method, feature_names, coefficients, intercept, fitted_on, source, examples and positives'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF btrim(save_follow_calibration.signal_version) = '' OR btrim(save_follow_calibration.source) = '' THEN
        RAISE EXCEPTION 'ctxgraph: a calibration needs a non-blank signal_version and source'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF save_follow_calibration.method <> 'logistic' THEN
        RAISE EXCEPTION 'ctxgraph: unknown calibration method %', quote_literal(save_follow_calibration.method)
            USING ERRCODE = 'invalid_parameter_value', HINT = 'The only method is logistic.';
    END IF;
    IF save_follow_calibration.fitted_on NOT IN ('judge', 'labels') THEN
        RAISE EXCEPTION 'ctxgraph: fitted_on must be ''judge'' or ''labels'', got %', quote_literal(save_follow_calibration.fitted_on)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF coalesce(array_ndims(save_follow_calibration.feature_names), 0) <> 1
       OR array_position(save_follow_calibration.feature_names, NULL) IS NOT NULL
       OR '' = ANY (save_follow_calibration.feature_names)
       OR (SELECT count(DISTINCT f) FROM unnest(save_follow_calibration.feature_names) AS f)
          <> cardinality(save_follow_calibration.feature_names) THEN
        RAISE EXCEPTION 'ctxgraph: feature_names must be a non-empty list of distinct, non-empty names, got %',
            save_follow_calibration.feature_names
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF coalesce(array_ndims(save_follow_calibration.coefficients), 0) <> 1
       OR cardinality(save_follow_calibration.coefficients) <> cardinality(save_follow_calibration.feature_names) THEN
        RAISE EXCEPTION 'ctxgraph: % coefficients for % features', cardinality(save_follow_calibration.coefficients),
            cardinality(save_follow_calibration.feature_names)
            USING ERRCODE = 'invalid_parameter_value', HINT = 'One coefficient per feature, in the order of feature_names.';
    END IF;
    IF array_position(save_follow_calibration.coefficients, NULL) IS NOT NULL
       OR save_follow_calibration.coefficients && not_finite
       OR save_follow_calibration.intercept = ANY (not_finite) THEN
        RAISE EXCEPTION 'ctxgraph: coefficients and intercept must be finite numbers, got % and %',
            save_follow_calibration.coefficients, save_follow_calibration.intercept
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF save_follow_calibration.examples < 1
       OR save_follow_calibration.positives NOT BETWEEN 0 AND save_follow_calibration.examples THEN
        RAISE EXCEPTION 'ctxgraph: need 1 or more examples and 0 to examples positives, got % examples and % positives',
            save_follow_calibration.examples, save_follow_calibration.positives
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF save_follow_calibration.cv_auc = 'NaN' OR save_follow_calibration.cv_auc NOT BETWEEN 0 AND 1
       OR save_follow_calibration.cv_accuracy = 'NaN' OR save_follow_calibration.cv_accuracy NOT BETWEEN 0 AND 1 THEN
        RAISE EXCEPTION 'ctxgraph: cv_auc and cv_accuracy must lie in [0, 1] (or be NULL), got % and %',
            save_follow_calibration.cv_auc, save_follow_calibration.cv_accuracy
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF save_follow_calibration.cv_folds < 2
       OR (save_follow_calibration.cv_folds IS NULL
           AND (save_follow_calibration.cv_auc IS NOT NULL OR save_follow_calibration.cv_accuracy IS NOT NULL)) THEN
        RAISE EXCEPTION 'ctxgraph: cv_folds must be at least 2, and given whenever cv_auc or cv_accuracy is, got %',
            coalesce(save_follow_calibration.cv_folds::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (save_follow_calibration.cascade_low IS NULL) <> (save_follow_calibration.cascade_high IS NULL)
       OR save_follow_calibration.cascade_low = 'NaN' OR save_follow_calibration.cascade_high = 'NaN'
       OR save_follow_calibration.cascade_low < 0 OR save_follow_calibration.cascade_high > 1
       OR save_follow_calibration.cascade_low > save_follow_calibration.cascade_high THEN
        RAISE EXCEPTION 'ctxgraph: the cascade band needs both ends or neither, with 0 <= cascade_low <= cascade_high <= 1, got [%, %]',
            coalesce(save_follow_calibration.cascade_low::text, 'NULL'), coalesce(save_follow_calibration.cascade_high::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF save_follow_calibration.cascade_max_disagreement = 'NaN'
       OR save_follow_calibration.cascade_max_disagreement NOT BETWEEN 0 AND 1 THEN
        RAISE EXCEPTION 'ctxgraph: cascade_max_disagreement must lie in [0, 1] (or be NULL), got %',
            save_follow_calibration.cascade_max_disagreement
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    INSERT INTO ctxgraph.follow_calibrations AS c
           (skill, signal_version, method, feature_names, coefficients, intercept, fitted_on, source, examples,
            positives, cv_auc, cv_accuracy, cv_folds, cascade_low, cascade_high, cascade_max_disagreement)
    VALUES (save_follow_calibration.skill, save_follow_calibration.signal_version, save_follow_calibration.method,
            save_follow_calibration.feature_names, save_follow_calibration.coefficients,
            save_follow_calibration.intercept, save_follow_calibration.fitted_on, save_follow_calibration.source,
            save_follow_calibration.examples, save_follow_calibration.positives, save_follow_calibration.cv_auc,
            save_follow_calibration.cv_accuracy, save_follow_calibration.cv_folds, save_follow_calibration.cascade_low,
            save_follow_calibration.cascade_high, save_follow_calibration.cascade_max_disagreement)
    RETURNING c.calibration_id INTO saved;
    RETURN saved;
END
$$;

COMMENT ON FUNCTION ctxgraph.save_follow_calibration(text, text, text, text[], double precision[], double precision, text, text,
                                                     integer, integer, double precision, double precision, integer,
                                                     double precision, double precision, double precision) IS
    'Saves one fitted follow calibration and returns its calibration_id; raises 22004 for a missing required argument and 22023 for an unknown skill or a fit that breaks a rule (NaN or infinite numbers, one coefficient per feature, positives within examples, scores in [0, 1], a cascade band with low <= high).';

-- current_follow_calibration: the fit in force for a skill and signal version, the latest saved;
-- no row when none was saved (the scoring pass then uses its documented default).
CREATE FUNCTION ctxgraph.current_follow_calibration(skill text, signal_version text)
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

REVOKE ALL ON FUNCTION
    ctxgraph.save_follow_calibration(text, text, text, text[], double precision[], double precision, text, text, integer,
                                     integer, double precision, double precision, integer, double precision,
                                     double precision, double precision),
    ctxgraph.current_follow_calibration(text, text) FROM PUBLIC;
DO $$
BEGIN
    PERFORM ctxgraph._grant('SELECT ON ctxgraph.follow_calibrations', '{scorer,analyst}');
    PERFORM ctxgraph._grant('EXECUTE ON FUNCTION ctxgraph.save_follow_calibration(text, text, text, text[], '
                            'double precision[], double precision, text, text, integer, integer, double precision, '
                            'double precision, integer, double precision, double precision, double precision)',
                            '{scorer}');
    PERFORM ctxgraph._grant('EXECUTE ON FUNCTION ctxgraph.current_follow_calibration(text, text)', '{scorer,analyst}');
END
$$;

COMMIT;
