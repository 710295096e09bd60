-- The follow probability (issue 10): the calibrated, judge-free probability that a script followed
-- a tip, as the follow rule reads it (judge first, then the probability, then the cosine), as
-- scored_retrievals and the maintained aggregates read it, who may write it, and the calibrations
-- it comes from (save_follow_calibration, current_follow_calibration).
BEGIN;
SELECT plan(74);

-- ---------------------------------------------------------------------------------------------
-- The rule's branches with a probability (14): follow_decision(llm, emb, probability,
-- emb_threshold 0.6, probability_threshold 0.5).
-- ---------------------------------------------------------------------------------------------
SELECT is(ctxgraph.follow_decision(true, 0.0, 0.0, 0.6, 0.5), 'judge_followed',
          'judge true wins over a probability of 0');
SELECT is(ctxgraph.follow_decision(false, 0.9, 1.0, 0.6, 0.5), 'judge_ignored',
          'judge false wins over a probability of 1');
SELECT is(ctxgraph.follow_decision(NULL, 0.1, 0.9, 0.6, 0.5), 'signal_followed',
          'no judge: a high probability wins over a low cosine');
SELECT is(ctxgraph.follow_decision(NULL, 0.9, 0.1, 0.6, 0.5), 'signal_ignored',
          'no judge: a low probability wins over a high cosine');
SELECT is(ctxgraph.follow_decision(NULL, 0.0, 0.5, 0.6, 0.5), 'signal_followed',
          'a probability exactly at the threshold is followed (>=)');
SELECT is(ctxgraph.follow_decision(NULL, 0.9, 0.4999999, 0.6, 0.5), 'signal_ignored',
          'a probability just below the threshold is ignored');
SELECT is(ctxgraph.follow_decision(NULL, 0.6, NULL, 0.6, 0.5), 'emb_followed',
          'no probability: the cosine decides, at its threshold followed');
SELECT is(ctxgraph.follow_decision(NULL, 0.59, NULL, 0.6, 0.5), 'emb_ignored',
          'no probability: the cosine decides, below its threshold ignored');
SELECT is(ctxgraph.follow_decision(NULL, 0.7, 'NaN', 0.6, 0.5), 'emb_followed',
          'a NaN probability is no signal: the cosine decides');
SELECT is(ctxgraph.follow_decision(NULL, 'NaN', NULL, 0.6, 0.5), 'unscored',
          'no judge, no probability, NaN cosine: unscored');
SELECT is(ctxgraph.follow_verdict('signal_followed'), true, 'follow_verdict: signal_followed is followed');
SELECT is(ctxgraph.follow_verdict('signal_ignored'), false, 'follow_verdict: signal_ignored is ignored');
SELECT is_empty($$SELECT 1
                    FROM unnest(ARRAY[true, false, NULL]) AS l (llm),
                         unnest('{0.0,0.59,0.6,1.0,NaN,NULL}'::float8[]) AS e (emb)
                   WHERE ctxgraph.follow_decision(l.llm, e.emb, 0.6)
                         IS DISTINCT FROM ctxgraph.follow_decision(l.llm, e.emb, NULL, 0.6, 0.5)$$,
                'the 3-input follow_decision is the 5-input one without a probability');
SELECT results_eq($$SELECT name, value FROM ctxgraph.parameters
                     WHERE name IN ('follow.probability_threshold', 'follow.weight.signal_followed',
                                    'follow.weight.signal_ignored') ORDER BY name$$,
                  $$VALUES ('follow.probability_threshold', 0.5::float8), ('follow.weight.signal_followed', 1.0::float8),
                           ('follow.weight.signal_ignored', 0.0::float8)$$,
                  'the threshold and the two signal weights are parameters with their defaults');

-- ---------------------------------------------------------------------------------------------
-- The 2-argument forms keep the ADR's answers; the 3-argument forms add the probability (6)
-- ---------------------------------------------------------------------------------------------
SELECT results_eq($$SELECT ctxgraph.follow_weight(l, e) FROM (VALUES (1, true, 0.0::float8), (2, false, 0.99),
                       (3, NULL, 0.6), (4, NULL, 0.59), (5, NULL, NULL), (6, NULL, 'NaN')) AS v (n, l, e) ORDER BY n$$,
                  $$VALUES (1.0::float8), (0.0), (1.0), (0.0), (0.5), (0.5)$$,
                  'follow_weight(llm, emb): judge 1.0 / 0.0, cosine 1.0 / 0.0 at 0.6, neither 0.5 (the ADR)');
SELECT results_eq($$SELECT ctxgraph.tip_followed(l, e) FROM (VALUES (1, true, 0.0::float8), (2, false, 0.99),
                       (3, NULL, 0.6), (4, NULL, 0.59), (5, NULL, NULL), (6, NULL, 'NaN')) AS v (n, l, e) ORDER BY n$$,
                  $$VALUES (true), (false), (true), (false), (NULL::boolean), (NULL)$$,
                  'tip_followed(llm, emb): the ADR''s verdicts');
SELECT is_empty($$SELECT 1
                    FROM unnest(ARRAY[true, false, NULL]) AS l (llm),
                         unnest('{0.0,0.59,0.6,1.0,NaN,NULL}'::float8[]) AS e (emb)
                   WHERE ctxgraph.follow_weight(l.llm, e.emb, NULL) IS DISTINCT FROM ctxgraph.follow_weight(l.llm, e.emb)
                      OR ctxgraph.tip_followed(l.llm, e.emb, NULL) IS DISTINCT FROM ctxgraph.tip_followed(l.llm, e.emb)$$,
                'without a probability the 3-argument forms answer as the 2-argument ones');
SELECT results_eq($$SELECT ctxgraph.follow_weight(l, e, p) FROM (VALUES (1, true, 0.0::float8, 0.0::float8),
                       (2, false, 0.0, 0.9), (3, NULL, 0.0, 0.5), (4, NULL, 0.99, 0.2), (5, NULL, 0.7, NULL),
                       (6, NULL, NULL, NULL)) AS v (n, l, e, p) ORDER BY n$$,
                  $$VALUES (1.0::float8), (0.0), (1.0), (0.0), (1.0), (0.5)$$,
                  'follow_weight(llm, emb, probability): judge, then signal 1.0 / 0.0 at 0.5, then cosine, then 0.5');
SELECT results_eq($$SELECT ctxgraph.tip_followed(l, e, p) FROM (VALUES (1, true, 0.0::float8, 0.0::float8),
                       (2, false, 0.0, 0.9), (3, NULL, 0.0, 0.5), (4, NULL, 0.99, 0.2), (5, NULL, 0.7, NULL),
                       (6, NULL, NULL, NULL)) AS v (n, l, e, p) ORDER BY n$$,
                  $$VALUES (true), (false), (true), (false), (true), (NULL::boolean)$$,
                  'tip_followed(llm, emb, probability): the same branches as verdicts');
CREATE FUNCTION pg_temp.without_parameter(name text, query text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM ctxgraph.parameters AS p WHERE p.name = without_parameter.name;
    EXECUTE format('SELECT count(q.*) FROM (%s) AS q', query);
    RAISE EXCEPTION 'answered' USING ERRCODE = 'P0004';
EXCEPTION
    WHEN invalid_parameter_value THEN RETURN SQLERRM;
    WHEN assert_failure THEN RETURN 'answered without ' || name;
END
$$;
SELECT is(pg_temp.without_parameter('follow.probability_threshold', 'SELECT ctxgraph.follow_weight(NULL, 0.1, 0.9)'),
          'ctxgraph: no parameter named ''follow.probability_threshold''',
          'follow_weight with a probability but no follow.probability_threshold raises');

-- ---------------------------------------------------------------------------------------------
-- scored_retrievals and the aggregates on hand-built rows (12). One tip, rule r, run-f:
--   a1 passes (credit 1.0):            no judge, cosine 0.1, probability 0.8  -> signal_followed
--   a2 breaks the system (-0.2):       no judge, cosine 0.9, probability 0.3  -> signal_ignored
--   a3 fails cleanly (0.0):            judge true, cosine 0.0, probability 0.1 -> judge_followed
--   an unlinked legacy row (0.8):      no judge, cosine 0.7, no probability   -> emb_followed
-- hit_rate = (1.0 * 1 + -0.2 * 0 + 0.0 * 1 + 0.8 * 1) / 4 = 0.45; follow rate 3/4; harm 0 (a2 is
-- not followed).
-- ---------------------------------------------------------------------------------------------
SELECT tests.make_tip('stig', 'r', 'probability tip') AS tip \gset
SELECT tests.make_attempt('stig', 'run-f', 'r', 1, '2026-11-29 10:00+00') AS a1 \gset
SELECT tests.make_attempt('stig', 'run-f', 'r', 2, '2026-11-29 11:00+00') AS a2 \gset
SELECT tests.make_attempt('stig', 'run-f', 'r', 3, '2026-11-29 12:00+00') AS a3 \gset
INSERT INTO stig.tip_retrievals (run_id, attempt_id, tip_id, rule_id, rank, tip_followed_llm, tip_followed_emb,
                                 follow_probability, retrieved_at)
VALUES ('run-f', :a1, :tip, 'r', 1, NULL, 0.1, 0.8, '2026-11-29 10:00+00'),
       ('run-f', :a2, :tip, 'r', 1, NULL, 0.9, 0.3, '2026-11-29 11:00+00'),
       ('run-f', :a3, :tip, 'r', 1, true, 0.0, 0.1, '2026-11-29 12:00+00');
SELECT ctxgraph.record_outcome('stig', :a1, true) AS o1 \gset
SELECT ctxgraph.record_outcome('stig', :a2, false, 'health_failure') AS o2 \gset
SELECT ctxgraph.record_outcome('stig', :a3, false, 'clean_failure') AS o3 \gset
INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, outcome_value, outcome_confidence, tip_followed_emb,
                                 retrieved_at)
VALUES ('run-f', :tip, 'r', 2, 0.8, 1.0, 0.7, '2026-11-29 13:00+00');

SELECT results_eq(
    format($$SELECT credit, followed, follow_weight, follow_source, follow_decision, follow_probability
               FROM stig.scored_retrievals WHERE tip_id = %s ORDER BY retrieved_at$$, :tip),
    $$VALUES (1.0::float8, true, 1.0::float8, 'signal', 'signal_followed', 0.8::float8),
             (-0.2::float8, false, 0.0::float8, 'signal', 'signal_ignored', 0.3::float8),
             (0.0::float8, true, 1.0::float8, 'judge', 'judge_followed', 0.1::float8),
             (0.8::float8, true, 1.0::float8, 'embedding', 'emb_followed', NULL::float8)$$,
    'scored_retrievals: judge first, then the probability (source signal), then the cosine; the probability shown last');
SELECT is(ARRAY(SELECT a.attname::text FROM pg_attribute AS a
                 WHERE a.attrelid = 'ctxgraph.scored_retrievals'::regclass AND a.attnum > 0 ORDER BY a.attnum DESC LIMIT 1),
          ARRAY['follow_probability'], 'follow_probability is the last column of ctxgraph.scored_retrievals');
SELECT results_eq(format('SELECT round(hit_rate::numeric, 6), round(follow_rate::numeric, 6), harm FROM stig.tip_hit_rates WHERE tip_id = %s', :tip),
                  $$VALUES (0.45, 0.75, 0::bigint)$$,
                  'tip_hit_rates: hit_rate 0.45, follow rate 3/4, harm 0 (the system broke where the signal says ignored)');

-- The reference, written here independently of scored_retrievals and refresh_tip_stats: the
-- rule spelled out over the raw log, every tip of every skill that has a retrieval.
CREATE TEMP VIEW reference_stats AS
SELECT r.skill, r.tip_id, count(*) AS retrievals, count(r.outcome_value) AS scored,
       round(coalesce(sum(r.outcome_value * coalesce(r.outcome_confidence, 1.0) * w.weight)
                          FILTER (WHERE r.outcome_value IS NOT NULL), 0)::numeric, 10) AS weighted_sum,
       count(*) FILTER (WHERE r.outcome_value IS NOT NULL AND w.followed IS NOT NULL) AS follow_known,
       count(*) FILTER (WHERE r.outcome_value IS NOT NULL AND w.followed) AS followed
  FROM ctxgraph.tip_retrievals AS r
 CROSS JOIN LATERAL (
       SELECT CASE WHEN r.tip_followed_llm IS NOT NULL THEN r.tip_followed_llm
                   WHEN r.follow_probability IS NOT NULL
                       THEN r.follow_probability >= ctxgraph.param('follow.probability_threshold')
                   WHEN r.tip_followed_emb IS NULL OR r.tip_followed_emb = 'NaN' THEN NULL
                   ELSE r.tip_followed_emb >= ctxgraph.param('follow.emb_threshold')
              END AS followed,
              CASE WHEN r.tip_followed_llm THEN ctxgraph.param('follow.weight.judge_followed')
                   WHEN NOT r.tip_followed_llm THEN ctxgraph.param('follow.weight.judge_ignored')
                   WHEN r.follow_probability >= ctxgraph.param('follow.probability_threshold')
                       THEN ctxgraph.param('follow.weight.signal_followed')
                   WHEN r.follow_probability IS NOT NULL THEN ctxgraph.param('follow.weight.signal_ignored')
                   WHEN r.tip_followed_emb IS NULL OR r.tip_followed_emb = 'NaN' THEN ctxgraph.param('follow.weight.unscored')
                   WHEN r.tip_followed_emb >= ctxgraph.param('follow.emb_threshold') THEN ctxgraph.param('follow.weight.emb_followed')
                   ELSE ctxgraph.param('follow.weight.emb_ignored')
              END AS weight) AS w
 GROUP BY r.skill, r.tip_id;
CREATE TEMP VIEW maintained_stats AS
SELECT skill, tip_id, retrievals, scored, round(weighted_sum::numeric, 10) AS weighted_sum, follow_known, followed
  FROM ctxgraph.tip_stats WHERE retrievals > 0;

SELECT set_eq('SELECT * FROM maintained_stats', 'SELECT * FROM reference_stats',
              'tip_stats = the rule spelled out over the log, with probabilities written by INSERT');

-- The scorer writes probabilities, on the partition and through the parent: a2 now followed
-- (0.6), a1 still followed (0.95). hit_rate (1.0 - 0.2 + 0.0 + 0.8) / 4 = 0.4, follow rate 1, harm 1.
SET LOCAL ROLE ctxgraph_scorer;
SELECT lives_ok(format('UPDATE stig.tip_retrievals SET follow_probability = 0.6 WHERE attempt_id = %s', :a2),
                'scorer: UPDATE of follow_probability on stig.tip_retrievals works');
SELECT lives_ok(format($$UPDATE ctxgraph.tip_retrievals SET follow_probability = 0.95 WHERE skill = 'stig' AND attempt_id = %s$$, :a1),
                'scorer: the same UPDATE through the parent ctxgraph.tip_retrievals works');
RESET ROLE;
SELECT results_eq(format('SELECT round(hit_rate::numeric, 6), round(follow_rate::numeric, 6), harm FROM stig.tip_hit_rates WHERE tip_id = %s', :tip),
                  $$VALUES (0.4, 1.0, 1::bigint)$$,
                  'after the scorer''s update: hit_rate 0.4, follow rate 1, harm 1 (a2 followed while the system broke)');
SELECT set_eq('SELECT * FROM maintained_stats', 'SELECT * FROM reference_stats',
              'after the scorer''s UPDATE of follow_probability: tip_stats = reference');

-- A probability taken away falls back to the cosine (a1: cosine 0.1, ignored).
UPDATE stig.tip_retrievals SET follow_probability = NULL WHERE attempt_id = :a1;
SELECT results_eq(format('SELECT follow_source, follow_decision, follow_weight FROM stig.scored_retrievals WHERE attempt_id = %s', :a1),
                  $$VALUES ('embedding', 'emb_ignored', 0.0::float8)$$,
                  'a row whose probability is set back to NULL falls back to the cosine');
SELECT set_eq('SELECT * FROM maintained_stats', 'SELECT * FROM reference_stats',
              'after a probability set back to NULL: tip_stats = reference');

-- The threshold and the signal weights are read where they are used: a2's 0.6 falls below 0.7,
-- and signal_ignored tuned to 0.3 weighs it; every tip's stats are rebuilt.
UPDATE ctxgraph.parameters SET value = 0.7 WHERE name = 'follow.probability_threshold';
UPDATE ctxgraph.parameters SET value = 0.3 WHERE name = 'follow.weight.signal_ignored';
SELECT results_eq(format('SELECT follow_decision, follow_weight FROM stig.scored_retrievals WHERE attempt_id = %s', :a2),
                  $$VALUES ('signal_ignored', 0.3::float8)$$,
                  'follow.probability_threshold 0.7 and follow.weight.signal_ignored 0.3 are the ones in force');
SELECT set_eq('SELECT * FROM maintained_stats', 'SELECT * FROM reference_stats',
              'after changing the probability threshold and a signal weight: tip_stats = reference');
UPDATE ctxgraph.parameters SET value = 0.5 WHERE name = 'follow.probability_threshold';
UPDATE ctxgraph.parameters SET value = 0.0 WHERE name = 'follow.weight.signal_ignored';

-- ---------------------------------------------------------------------------------------------
-- Who may write follow_probability (9)
-- ---------------------------------------------------------------------------------------------
SET LOCAL ROLE ctxgraph_writer;
SELECT throws_ok(format($$INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, follow_probability)
                          VALUES ('run-f', %s, 'r', 3, 0.9)$$, :tip),
                 '42501', 'permission denied for table tip_retrievals',
                 'writer: INSERT naming follow_probability is refused (42501)');
SELECT throws_ok(format($$INSERT INTO ctxgraph.tip_retrievals (skill, run_id, tip_id, rule_id, rank, follow_probability)
                          VALUES ('stig', 'run-f', %s, 'r', 3, 0.9)$$, :tip),
                 '42501', 'permission denied for table tip_retrievals',
                 'writer: the same INSERT through the parent is refused (42501)');
SELECT lives_ok(format($$INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, similarity_score)
                         VALUES ('run-f', %s, 'r', 3, 0.5)$$, :tip),
                'writer: a plain INSERT of what it logs still works');
SELECT throws_ok(format('UPDATE stig.tip_retrievals SET follow_probability = 0.9 WHERE attempt_id = %s', :a3),
                 '42501', 'permission denied for table tip_retrievals',
                 'writer: UPDATE of follow_probability is refused (42501)');
RESET ROLE;
SET LOCAL ROLE ctxgraph_analyst;
SELECT throws_ok(format('UPDATE stig.tip_retrievals SET follow_probability = 0.9 WHERE attempt_id = %s', :a3),
                 '42501', 'permission denied for table tip_retrievals',
                 'analyst: UPDATE of follow_probability is refused (42501)');
RESET ROLE;
SELECT lives_ok($$SELECT ctxgraph.add_skill('k9', 'binary', 'Test skill.')$$, 'a third skill is added');
SELECT ok(has_column_privilege('ctxgraph_scorer', 'k9.tip_retrievals', 'follow_probability', 'UPDATE'),
          'a skill added later: the scorer may UPDATE its follow_probability');
SELECT ok(NOT has_column_privilege('ctxgraph_writer', 'k9.tip_retrievals', 'follow_probability', 'INSERT')
          AND NOT has_column_privilege('ctxgraph_writer', 'k9.tip_retrievals', 'follow_probability', 'UPDATE')
          AND has_column_privilege('ctxgraph_writer', 'k9.tip_retrievals', 'tip_id', 'INSERT'),
          'a skill added later: the writer inserts its rows but can neither insert nor update follow_probability');
SELECT has_column('k9', 'scored_retrievals', 'follow_probability', 'a skill added later: k9.scored_retrievals shows follow_probability');

-- ---------------------------------------------------------------------------------------------
-- The column refuses NaN and values outside [0, 1] (3)
-- ---------------------------------------------------------------------------------------------
SELECT throws_ok(format($$UPDATE stig.tip_retrievals SET follow_probability = 'NaN' WHERE attempt_id = %s$$, :a3),
                 '23514', NULL, 'follow_probability NaN is refused (23514)');
SELECT throws_ok(format('UPDATE stig.tip_retrievals SET follow_probability = 1.5 WHERE attempt_id = %s', :a3),
                 '23514', NULL, 'follow_probability above 1 is refused (23514)');
SELECT throws_ok(format('UPDATE stig.tip_retrievals SET follow_probability = -0.1 WHERE attempt_id = %s', :a3),
                 '23514', NULL, 'follow_probability below 0 is refused (23514)');

-- ---------------------------------------------------------------------------------------------
-- Calibrations: the table as a contract, save and current, their refusals (22)
-- ---------------------------------------------------------------------------------------------
SELECT columns_are('ctxgraph', 'follow_calibrations',
    ARRAY['calibration_id', 'skill', 'signal_version', 'method', 'feature_names', 'coefficients', 'intercept',
          'fitted_on', 'source', 'examples', 'positives', 'cv_auc', 'cv_accuracy', 'cv_folds', 'cascade_low',
          'cascade_high', 'cascade_max_disagreement', 'fitted_at'],
    'follow_calibrations has exactly the contract columns');
SELECT columns_are('ctxgraph', 'retrieval_scores',
    ARRAY['skill', 'retrieval_id', 'llm_status', 'emb_status', 'judge_model', 'prompt_sha256', 'embed_model',
          'embed_mode', 'script_sha256', 'scored_at', 'signal_status', 'calibration_id', 'signal_version',
          'follow_evidence'],
    'retrieval_scores gains signal_status, calibration_id, signal_version and follow_evidence');

SET LOCAL ROLE ctxgraph_scorer;
SELECT ctxgraph.save_follow_calibration('stig', 'lexical-1', 'logistic', '{lexical_overlap,cosine}', '{3.25,1.5}', -2.0,
                                        'labels', 'samples/stig/labels.jsonl sha256 ab12', 56, 20, 0.81, 0.76, 5,
                                        0.35, 0.65, 0.1) AS cal1 \gset
SELECT results_eq(
    $$SELECT feature_names, coefficients, intercept, fitted_on, examples, positives, cv_auc, cv_folds, cascade_low,
             cascade_high, cascade_max_disagreement
        FROM ctxgraph.current_follow_calibration('stig', 'lexical-1')$$,
    $$VALUES ('{lexical_overlap,cosine}'::text[], '{3.25,1.5}'::float8[], -2.0::float8, 'labels', 56, 20, 0.81::float8, 5,
              0.35::float8, 0.65::float8, 0.1::float8)$$,
    'scorer: a saved fit comes back from current_follow_calibration');
SELECT ctxgraph.save_follow_calibration('stig', 'lexical-1', 'logistic', '{lexical_overlap}', '{2.0}', -1.0,
                                        'judge', 'judge-model prompt sha256 cd34', 120, 40, 0.7, 0.72, 4) AS cal2 \gset
SELECT is((SELECT calibration_id FROM ctxgraph.current_follow_calibration('stig', 'lexical-1')), :cal2::bigint,
          'scorer: the fit saved last is the current one (same fitted_at: the larger id)');
-- A fit without cross-validated figures (two labels, say) is kept for reading, never put in force.
SELECT ctxgraph.save_follow_calibration('stig', 'lexical-1', 'logistic', '{lexical_overlap}', '{9.0}', -4.0,
                                        'labels', 'two labels', 2, 1) AS cal3 \gset
SELECT results_eq(format($$SELECT cv_auc, cv_accuracy, cv_folds, cascade_low, cascade_high
                             FROM ctxgraph.follow_calibrations WHERE calibration_id = %s$$, :cal3),
                  $$VALUES (NULL::float8, NULL::float8, NULL::integer, NULL::float8, NULL::float8)$$,
                  'a fit without cross-validation or a cascade band leaves those NULL');
SELECT is((SELECT calibration_id FROM ctxgraph.current_follow_calibration('stig', 'lexical-1')), :cal2::bigint,
          'a fit saved later without cross-validated figures is never put in force: the last one with them stays');
RESET ROLE;
-- An older fit saved afterwards (a larger id) does not displace the latest by fitted_at.
INSERT INTO ctxgraph.follow_calibrations (skill, signal_version, method, feature_names, coefficients, intercept,
                                          fitted_on, source, examples, positives, fitted_at)
VALUES ('stig', 'lexical-1', 'logistic', '{cosine}', '{1.0}', 0.0, 'judge', 'backfill', 10, 5, now() - interval '1 day');
SELECT is((SELECT calibration_id FROM ctxgraph.current_follow_calibration('stig', 'lexical-1')), :cal2::bigint,
          'the current fit is the latest by fitted_at, then calibration_id');
SELECT is_empty($$SELECT * FROM ctxgraph.current_follow_calibration('stig', 'lexical-2')$$,
                'no fit for another signal version: no row');
SELECT is_empty($$SELECT * FROM ctxgraph.current_follow_calibration('cve', 'lexical-1')$$,
                'no fit for another skill: no row');
SELECT throws_ok($$SELECT * FROM ctxgraph.current_follow_calibration('nope', 'lexical-1')$$,
                 '22023', 'ctxgraph: unknown skill ''nope''', 'current_follow_calibration: unknown skill raises 22023');

SELECT throws_ok($$SELECT ctxgraph.save_follow_calibration('stig', 'lexical-1', 'logistic', '{a,b}', '{1.0,NaN}', 0.0,
                                                           'judge', 's', 10, 5)$$,
                 '22023', NULL, 'save: a NaN coefficient is refused (22023)');
SELECT throws_ok($$SELECT ctxgraph.save_follow_calibration('stig', 'lexical-1', 'logistic', '{a}', '{1.0}', 'NaN',
                                                           'judge', 's', 10, 5)$$,
                 '22023', NULL, 'save: a NaN intercept is refused (22023)');
SELECT throws_ok($$SELECT ctxgraph.save_follow_calibration('stig', 'lexical-1', 'logistic', '{a}', '{-Infinity}', 0.0,
                                                           'judge', 's', 10, 5)$$,
                 '22023', NULL, 'save: an infinite coefficient is refused (22023)');
SELECT throws_ok($$SELECT ctxgraph.save_follow_calibration('stig', 'lexical-1', 'logistic', '{a,b}', '{1.0}', 0.0,
                                                           'judge', 's', 10, 5)$$,
                 '22023', 'ctxgraph: 1 coefficients for 2 features', 'save: mismatched array lengths are refused (22023)');
SELECT throws_ok($$SELECT ctxgraph.save_follow_calibration('stig', 'lexical-1', 'logistic', '{a}', '{1.0}', 0.0,
                                                           'judge', 's', 10, 5, NULL, NULL, NULL, 0.7, 0.3)$$,
                 '22023', NULL, 'save: a cascade band with low > high is refused (22023)');
SELECT throws_ok($$SELECT ctxgraph.save_follow_calibration('stig', 'lexical-1', 'logistic', '{a}', '{1.0}', 0.0,
                                                           'judge', 's', 10, 5, NULL, NULL, NULL, 0.3, NULL)$$,
                 '22023', NULL, 'save: half a cascade band is refused (22023)');
SELECT throws_ok($$SELECT ctxgraph.save_follow_calibration('stig', 'lexical-1', 'logistic', '{a}', '{1.0}', 0.0,
                                                           'judge', 's', 10, 5, 'NaN', NULL, 5)$$,
                 '22023', NULL, 'save: a NaN cv_auc is refused (22023)');
SELECT throws_ok($$SELECT ctxgraph.save_follow_calibration('stig', 'lexical-1', 'logistic', '{a}', '{1.0}', 0.0,
                                                           'judge', 's', 10, 11)$$,
                 '22023', NULL, 'save: more positives than examples are refused (22023)');
SELECT throws_ok($$SELECT ctxgraph.save_follow_calibration('nope', 'lexical-1', 'logistic', '{a}', '{1.0}', 0.0,
                                                           'judge', 's', 10, 5)$$,
                 '22023', 'ctxgraph: unknown skill ''nope''', 'save: an unknown skill is refused (22023)');
SELECT throws_ok($$SELECT ctxgraph.save_follow_calibration(NULL, 'lexical-1', 'logistic', '{a}', '{1.0}', 0.0,
                                                           'judge', 's', 10, 5)$$,
                 '22004', NULL, 'save: a NULL skill is refused (22004)');
SELECT throws_ok($$INSERT INTO ctxgraph.follow_calibrations (skill, signal_version, method, feature_names, coefficients,
                                                             intercept, fitted_on, source, examples, positives,
                                                             cascade_low, cascade_high, cascade_max_disagreement)
                   VALUES ('stig', 'v', 'logistic', '{a}', '{1.0}', 0.0, 'judge', 's', 10, 5, 0.2, 0.4, 'NaN')$$,
                 '23514', NULL, 'the table itself refuses a NaN it is handed directly (23514)');

-- retrieval_scores names the fit a probability came from; deleting the fit forgets the link only,
-- and a fit of another skill cannot be named.
INSERT INTO ctxgraph.retrieval_scores (skill, retrieval_id, llm_status, emb_status, signal_status, calibration_id,
                                       signal_version, follow_evidence)
SELECT 'stig', id, 'judge_skipped', 'computed', 'computed', :cal1, 'lexical-1', '{"matched": ["crypto-policies"]}'
  FROM stig.tip_retrievals WHERE attempt_id = :a2;
DELETE FROM ctxgraph.follow_calibrations WHERE calibration_id = :cal1;
SELECT results_eq(format($$SELECT skill, calibration_id, signal_status, signal_version FROM ctxgraph.retrieval_scores
                            WHERE retrieval_id = (SELECT id FROM stig.tip_retrievals WHERE attempt_id = %s)$$, :a2),
                  $$VALUES ('stig', NULL::bigint, 'computed', 'lexical-1')$$,
                  'deleting a fit sets retrieval_scores.calibration_id to NULL and keeps the row');
SELECT throws_ok(format($$UPDATE ctxgraph.retrieval_scores SET calibration_id = %s
                           WHERE retrieval_id = (SELECT id FROM stig.tip_retrievals WHERE attempt_id = %s)$$,
                        (SELECT ctxgraph.save_follow_calibration('cve', 'lexical-1', 'logistic', '{a}', '{1.0}', 0.0,
                                                                 'judge', 's', 10, 5)), :a2),
                 '23503', NULL, 'a stig retrieval cannot name a cve fit (23503)');

-- ---------------------------------------------------------------------------------------------
-- Privileges of the calibration functions (7)
-- ---------------------------------------------------------------------------------------------
SELECT function_privs_are('ctxgraph', f.fn, f.args, 'public', '{}'::name[],
                          format('PUBLIC may not execute ctxgraph.%s(%s)', f.fn, array_to_string(f.args, ', ')))
  FROM (VALUES (1, 'save_follow_calibration'::name,
                '{text,text,text,text[],double precision[],double precision,text,text,integer,integer,double precision,double precision,integer,double precision,double precision,double precision}'::name[]),
               (2, 'current_follow_calibration', '{text,text}'),
               (3, 'follow_decision', '{boolean,double precision,double precision,double precision,double precision}'),
               (4, 'follow_weight', '{boolean,double precision,double precision}'),
               (5, 'tip_followed', '{boolean,double precision,double precision}')) AS f (n, fn, args)
 ORDER BY f.n;
SET LOCAL ROLE ctxgraph_analyst;
SELECT throws_ok($$SELECT ctxgraph.save_follow_calibration('stig', 'lexical-1', 'logistic', '{a}', '{1.0}', 0.0,
                                                           'judge', 's', 10, 5)$$,
                 '42501', NULL, 'analyst: save_follow_calibration is refused (42501)');
SELECT lives_ok($$SELECT * FROM ctxgraph.current_follow_calibration('stig', 'lexical-1')$$,
                'analyst: current_follow_calibration works');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
