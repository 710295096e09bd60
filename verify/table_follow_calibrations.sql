-- Verify ctxgraph:table_follow_calibrations on pg

SELECT calibration_id, skill, signal_version, method, feature_names, coefficients, intercept, fitted_on, source,
       examples, positives, cv_auc, cv_accuracy, cv_folds, cascade_low, cascade_high, cascade_max_disagreement,
       fitted_at
  FROM ctxgraph.follow_calibrations WHERE FALSE;
SELECT 'ctxgraph.save_follow_calibration(text, text, text, text[], double precision[], double precision, text, text, integer, integer, double precision, double precision, integer, double precision, double precision, double precision)'::regprocedure,
       'ctxgraph.current_follow_calibration(text, text)'::regprocedure;
-- Privileges both ways: the scorer saves and reads fits, the analyst reads them, nobody writes the
-- table directly, PUBLIC runs nothing.
SELECT 1 / has_function_privilege('ctxgraph_scorer', 'ctxgraph.save_follow_calibration(text, text, text, text[], double precision[], double precision, text, text, integer, integer, double precision, double precision, integer, double precision, double precision, double precision)', 'EXECUTE')::int;
SELECT 1 / (NOT has_function_privilege('ctxgraph_analyst', 'ctxgraph.save_follow_calibration(text, text, text, text[], double precision[], double precision, text, text, integer, integer, double precision, double precision, integer, double precision, double precision, double precision)', 'EXECUTE'))::int;
SELECT 1 / has_function_privilege('ctxgraph_analyst', 'ctxgraph.current_follow_calibration(text, text)', 'EXECUTE')::int;
SELECT 1 / (NOT has_function_privilege('ctxgraph_ranker', 'ctxgraph.current_follow_calibration(text, text)', 'EXECUTE'))::int;
SELECT 1 / (NOT EXISTS (SELECT 1 FROM pg_catalog.pg_proc AS p, pg_catalog.aclexplode(p.proacl) AS x
                         WHERE p.proname IN ('save_follow_calibration', 'current_follow_calibration')
                           AND p.pronamespace = 'ctxgraph'::regnamespace AND x.grantee = 0))::int;
SELECT 1 / has_table_privilege('ctxgraph_analyst', 'ctxgraph.follow_calibrations', 'SELECT')::int;
SELECT 1 / (NOT has_table_privilege('ctxgraph_scorer', 'ctxgraph.follow_calibrations', 'INSERT'))::int;
SELECT 1 / (NOT has_table_privilege('ctxgraph_writer', 'ctxgraph.follow_calibrations', 'SELECT'))::int;
-- Behaviour, rolled back: a saved fit comes back as the current one, the latest fit with its
-- cross-validated figures wins, another
-- signal version has none, and a NaN is refused by the function (22023) and by the table (23514).
DO $$
DECLARE
    first_id  bigint;
    second_id bigint;
    current   ctxgraph.follow_calibrations;
BEGIN
    first_id := ctxgraph.save_follow_calibration('stig', 'verify-1', 'logistic', '{lexical,cosine}', '{2.0,3.5}', -1.25,
                                                 'labels', 'verify.jsonl sha256 0', 40, 12, 0.8, 0.75, 5, 0.3, 0.7, 0.1);
    SELECT * INTO current FROM ctxgraph.current_follow_calibration('stig', 'verify-1');
    IF current.calibration_id IS DISTINCT FROM first_id OR current.coefficients <> '{2.0,3.5}'
       OR current.feature_names <> '{lexical,cosine}' OR current.cascade_high <> 0.7 THEN
        RAISE EXCEPTION 'verify: current_follow_calibration does not return the saved fit: %', row_to_json(current);
    END IF;
    second_id := ctxgraph.save_follow_calibration('stig', 'verify-1', 'logistic', '{lexical}', '{1.0}', 0.0,
                                                  'judge', 'verify-model prompt 0', 30, 10, 0.7, 0.7, 3);
    IF (SELECT c.calibration_id FROM ctxgraph.current_follow_calibration('stig', 'verify-1') AS c) IS DISTINCT FROM second_id THEN
        RAISE EXCEPTION 'verify: the latest fit is not the current one';
    END IF;
    -- A later fit without cross-validated figures is kept but not put in force.
    PERFORM ctxgraph.save_follow_calibration('stig', 'verify-1', 'logistic', '{lexical}', '{5.0}', 0.0,
                                             'labels', 'verify two labels', 2, 1);
    IF (SELECT c.calibration_id FROM ctxgraph.current_follow_calibration('stig', 'verify-1') AS c) IS DISTINCT FROM second_id THEN
        RAISE EXCEPTION 'verify: a fit without cross-validated figures was put in force';
    END IF;
    IF EXISTS (SELECT 1 FROM ctxgraph.current_follow_calibration('stig', 'verify-2')) THEN
        RAISE EXCEPTION 'verify: current_follow_calibration answers for a signal version with no fit';
    END IF;
    BEGIN
        PERFORM ctxgraph.save_follow_calibration('stig', 'verify-1', 'logistic', '{lexical}', '{NaN}', 0.0,
                                                 'judge', 'verify', 3, 0);
        RAISE EXCEPTION 'verify: save_follow_calibration accepted a NaN coefficient';
    EXCEPTION WHEN invalid_parameter_value THEN NULL;
    END;
    BEGIN
        INSERT INTO ctxgraph.follow_calibrations (skill, signal_version, method, feature_names, coefficients, intercept,
                                                  fitted_on, source, examples, positives, cv_folds, cv_auc)
        VALUES ('stig', 'verify-1', 'logistic', '{lexical}', '{1.0}', 0.0, 'judge', 'verify', 3, 0, 5, 'NaN');
        RAISE EXCEPTION 'verify: the table accepted a NaN cv_auc';
    EXCEPTION WHEN check_violation THEN NULL;
    END;
    BEGIN
        INSERT INTO ctxgraph.follow_calibrations (skill, signal_version, method, feature_names, coefficients, intercept,
                                                  fitted_on, source, examples, positives, cascade_max_disagreement)
        VALUES ('stig', 'verify-1', 'logistic', '{lexical}', '{1.0}', 0.0, 'judge', 'verify', 3, 0, 'NaN');
        RAISE EXCEPTION 'verify: the table accepted a NaN cascade_max_disagreement';
    EXCEPTION WHEN check_violation THEN NULL;
    END;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
