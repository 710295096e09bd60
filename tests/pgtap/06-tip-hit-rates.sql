-- tip_hit_rates, the ranker's view, as a contract: its columns and types, its answers on small
-- hand-built rows, and the core property of the maintained aggregates behind it: after every kind
-- of write the agent, the scorer or an operator can make, ctxgraph.tip_stats (read through
-- tip_hit_rates) equals a from-scratch GROUP BY over the retrieval log.
--
-- Ids come from shared sequences, so they are captured with \gset and used as :name. Floating
-- values are compared after round(..., 6) (hand-checked rows) or round(..., 10) (the reference).
BEGIN;
SELECT plan(78);

-- ---------------------------------------------------------------------------------------------
-- Contract (35): columns and types of ctxgraph.tip_hit_rates and its stig projection.
-- ---------------------------------------------------------------------------------------------
SELECT columns_are('ctxgraph', 'tip_hit_rates',
                   ARRAY['skill', 'tip_id', 'rule_id', 'retrievals', 'scored', 'attempts', 'outcome_hit_rate',
                         'hit_rate', 'follow_rate', 'harm', 'utility_lower_bound', 'last_retrieved_at',
                         'retired', 'retired_at', 'effect', 'effect_lower_bound', 'effect_upper_bound'],
                   'ctxgraph.tip_hit_rates has exactly the contract''s columns');
SELECT columns_are('stig', 'tip_hit_rates',
                   ARRAY['tip_id', 'rule_id', 'retrievals', 'scored', 'attempts', 'outcome_hit_rate',
                         'hit_rate', 'follow_rate', 'harm', 'utility_lower_bound', 'last_retrieved_at',
                         'retired', 'retired_at', 'effect', 'effect_lower_bound', 'effect_upper_bound'],
                   'stig.tip_hit_rates has the same columns but skill');

CREATE TEMP TABLE expected_types (column_name name, type_name text, ord serial);
INSERT INTO expected_types (column_name, type_name) VALUES
    ('skill', 'text'), ('tip_id', 'bigint'), ('rule_id', 'text'), ('retrievals', 'bigint'),
    ('scored', 'bigint'), ('attempts', 'bigint'), ('outcome_hit_rate', 'double precision'),
    ('hit_rate', 'double precision'), ('follow_rate', 'double precision'), ('harm', 'bigint'),
    ('utility_lower_bound', 'double precision'), ('last_retrieved_at', 'timestamp with time zone'),
    ('retired', 'boolean'), ('retired_at', 'timestamp with time zone'), ('effect', 'double precision'),
    ('effect_lower_bound', 'double precision'), ('effect_upper_bound', 'double precision');

SELECT col_type_is(s, 'tip_hit_rates', e.column_name, e.type_name,
                   format('%s.tip_hit_rates.%s is %s', s, e.column_name, e.type_name))
  FROM (SELECT * FROM expected_types ORDER BY ord) AS e
 CROSS JOIN unnest(ARRAY['ctxgraph', 'stig']) AS s
 WHERE NOT (s = 'stig' AND e.column_name = 'skill')
 ORDER BY s, e.ord;

-- ---------------------------------------------------------------------------------------------
-- Hand-built rows. Rule V-100: tips A and B over five runs (graded stig outcomes: first-try pass
-- 1.0, pass on attempt 2 0.8, clean failure 0.0, health failure -0.2).
--
--   attempt  tips   outcome              A's verdict             B's verdict
--   run-1 #1 A, B   pass          1.0    judge followed          judge ignored
--   run-2 #1 A, B   clean_failure 0.0    judge followed          cosine 0.7 (followed, no judge)
--   run-3 #2 A      pass          0.8    cosine 0.3 (ignored)    -
--   run-4 #1 A, B   health_fail  -0.2    judge followed (harm)   judge ignored (no harm)
--   run-5 #1 A      not recorded yet     judge followed          -
-- ---------------------------------------------------------------------------------------------
SELECT tests.make_tip('stig', 'V-100', 'A: set MACs in /etc/crypto-policies/back-ends/opensshserver.config') AS tip_a,
       tests.make_tip('stig', 'V-100', 'B: run update-crypto-policies --set FIPS')                            AS tip_b,
       tests.make_tip('stig', 'V-101', 'D: legacy tip scored before attempts were linked')                   AS tip_d,
       tests.make_tip('stig', 'V-102', 'E: retrieved twice within one attempt')                              AS tip_e,
       tests.make_tip('stig', 'V-100', 'N: never retrieved')                                                 AS tip_n
\gset

SELECT tests.make_attempt_with_retrievals('stig', 'run-1', 'V-100', 1, ARRAY[:tip_a, :tip_b]::bigint[], true, NULL, '2026-11-01 10:00:00+00') AS a1,
       tests.make_attempt_with_retrievals('stig', 'run-2', 'V-100', 1, ARRAY[:tip_a, :tip_b]::bigint[], false, 'clean_failure', '2026-11-02 10:00:00+00') AS a2,
       tests.make_attempt_with_retrievals('stig', 'run-3', 'V-100', 2, ARRAY[:tip_a]::bigint[], true, NULL, '2026-11-03 10:00:00+00') AS a3,
       tests.make_attempt_with_retrievals('stig', 'run-4', 'V-100', 1, ARRAY[:tip_a, :tip_b]::bigint[], false, 'health_failure', '2026-11-04 10:00:00+00') AS a4,
       tests.make_attempt_with_retrievals('stig', 'run-5', 'V-100', 1, ARRAY[:tip_a]::bigint[], NULL, NULL, '2026-11-05 10:00:00+00') AS a5
\gset

-- What the scoring pass would write.
SELECT tests.set_follow('stig', :a1, true, 0.9, ARRAY[:tip_a]::bigint[])
     + tests.set_follow('stig', :a1, false, 0.2, ARRAY[:tip_b]::bigint[])
     + tests.set_follow('stig', :a2, true, 0.8, ARRAY[:tip_a]::bigint[])
     + tests.set_follow('stig', :a2, NULL, 0.7, ARRAY[:tip_b]::bigint[])
     + tests.set_follow('stig', :a3, NULL, 0.3, ARRAY[:tip_a]::bigint[])
     + tests.set_follow('stig', :a4, true, 0.9, ARRAY[:tip_a]::bigint[])
     + tests.set_follow('stig', :a4, false, 0.1, ARRAY[:tip_b]::bigint[])
     + tests.set_follow('stig', :a5, true, 0.9, ARRAY[:tip_a]::bigint[]) AS follow_rows
\gset

-- D: two legacy rows written straight into the log, not linked to any attempt, with their own
-- confidence: (1.0 * 0.5, judge followed) and (0.8 * 1.0, no verdict at all).
INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, outcome_value, outcome_confidence, retrieved_at,
                                 tip_followed_llm, tip_followed_emb)
VALUES ('run-1', :tip_d, 'V-101', 1, 1.0, 0.5, '2026-11-01 11:00:00+00', true, NULL),
       ('run-2', :tip_d, 'V-101', 1, 0.8, 1.0, '2026-11-02 11:00:00+00', NULL, NULL);

-- E: two prompts within one attempt both carried E (a first-try pass, judge followed both times).
SELECT array_agg(id) AS e_batches
  FROM (SELECT * FROM ctxgraph.log_retrievals('stig', 'run-1', 'V-102', ARRAY[:tip_e]::bigint[], ARRAY[0.9], '2026-11-01 12:00:00+00')
        UNION ALL
        SELECT * FROM ctxgraph.log_retrievals('stig', 'run-1', 'V-102', ARRAY[:tip_e]::bigint[], ARRAY[0.9], '2026-11-01 12:05:00+00')) AS b (id)
\gset
SELECT tests.make_attempt('stig', 'run-1', 'V-102', 1, '2026-11-01 12:00:00+00') AS ae \gset
SELECT ctxgraph.update_retrieval_attempt_ids('stig', :'e_batches'::bigint[], :ae) AS e_linked,
       ctxgraph.record_outcome('stig', :ae, true) AS e_recorded \gset
SELECT tests.set_follow('stig', :ae, true, 0.9) AS e_follow \gset

-- ---------------------------------------------------------------------------------------------
-- Results on the hand-built rows (12)
-- ---------------------------------------------------------------------------------------------
-- A: 5 retrievals, 4 scored (run-5 has no outcome yet), 4 distinct attempts;
--    outcome_hit_rate = (1.0 + 0.0 + 0.8 - 0.2) / 4 = 0.4;
--    hit_rate = (1.0*1 + 0.0*1 + 0.8*0 + -0.2*1) / 4 = 0.2 (the 0.8 pass ignored A: cosine 0.3 < 0.6);
--    follow_rate = 3 followed / 4 scored with a verdict = 0.75 (run-5's followed row is not scored);
--    harm = 1 (followed in run-4's health failure).
SELECT results_eq(
    format($$SELECT retrievals, scored, attempts, round(outcome_hit_rate::numeric, 6), round(hit_rate::numeric, 6),
                    round(follow_rate::numeric, 6), harm, last_retrieved_at, retired
               FROM stig.tip_hit_rates WHERE tip_id = %s$$, :tip_a),
    $$VALUES (5::bigint, 4::bigint, 4::bigint, 0.4, 0.2, 0.75, 1::bigint, '2026-11-05 09:59:59+00'::timestamptz, false)$$,
    'A: 5 retrievals, 4 scored attempts, outcome rate 0.4, follow-weighted 0.2, follow rate 3/4, harm 1, last retrieved in run-5');
-- B: 3 retrievals, all scored; outcome_hit_rate = (1.0 + 0.0 - 0.2) / 3 = 0.266667;
--    hit_rate = (1.0*0 + 0.0*1 + -0.2*0) / 3 = 0; follow_rate = 1/3 (the cosine 0.7 in run-2);
--    harm 0: B was ignored in the health failure and followed only in a clean failure.
SELECT results_eq(
    format($$SELECT retrievals, scored, attempts, round(outcome_hit_rate::numeric, 6), round(hit_rate::numeric, 6),
                    round(follow_rate::numeric, 6), harm
               FROM stig.tip_hit_rates WHERE tip_id = %s$$, :tip_b),
    $$VALUES (3::bigint, 3::bigint, 3::bigint, 0.266667, 0.0, 0.333333, 0::bigint)$$,
    'B: outcome rate 0.8/3, follow-weighted 0 (ignored in the pass), follow rate 1/3, no harm when ignored in a health failure');
-- D: outcome_hit_rate = (1.0*0.5 + 0.8*1.0) / 2 = 0.65; hit_rate = (0.5*1.0 + 0.8*0.5) / 2 = 0.45
--    (the row with no verdict weighs 0.5); follow_rate = 1/1; each unlinked row is its own attempt.
SELECT results_eq(
    format($$SELECT retrievals, scored, attempts, round(outcome_hit_rate::numeric, 6), round(hit_rate::numeric, 6),
                    round(follow_rate::numeric, 6), harm
               FROM stig.tip_hit_rates WHERE tip_id = %s$$, :tip_d),
    $$VALUES (2::bigint, 2::bigint, 2::bigint, 0.65, 0.45, 1.0, 0::bigint)$$,
    'D: rates use outcome_value * outcome_confidence; a row with no verdict weighs 0.5; unlinked rows count as one attempt each');
-- E: two retrievals of the same tip in one attempt are 2 retrievals but 1 attempt.
SELECT results_eq(
    format($$SELECT retrievals, scored, attempts, round(outcome_hit_rate::numeric, 6), round(hit_rate::numeric, 6)
               FROM stig.tip_hit_rates WHERE tip_id = %s$$, :tip_e),
    $$VALUES (2::bigint, 2::bigint, 1::bigint, 1.0, 1.0)$$,
    'E: two retrievals in one attempt count as ONE attempt (distinct attempts)');
-- N: a tip never retrieved has a row with zero counts and no rates.
SELECT results_eq(
    format($$SELECT retrievals, scored, attempts, outcome_hit_rate, hit_rate, follow_rate, harm, utility_lower_bound,
                    last_retrieved_at, retired
               FROM stig.tip_hit_rates WHERE tip_id = %s$$, :tip_n),
    $$VALUES (0::bigint, 0::bigint, 0::bigint, NULL::double precision, NULL::double precision, NULL::double precision,
              0::bigint, NULL::double precision, NULL::timestamptz, false)$$,
    'N: a tip with no retrievals has zero counts, NULL rates and bound, and is not retired');

SELECT is((SELECT round(utility_lower_bound::numeric, 9) FROM stig.tip_hit_rates WHERE tip_id = :tip_a),
          round(ctxgraph.wilson_lower(0.2, 4, 1.645)::numeric, 9),
          'A: utility_lower_bound = wilson_lower(hit_rate 0.2, attempts 4, z 1.645)');
SELECT is((SELECT round(utility_lower_bound::numeric, 9) FROM stig.tip_hit_rates WHERE tip_id = :tip_b),
          0.0::numeric,
          'B: utility_lower_bound = wilson_lower(0, 3, 1.645) = 0');
SELECT ok((SELECT bool_and(utility_lower_bound IS NOT DISTINCT FROM ctxgraph.wilson_lower(hit_rate, attempts, 1.645))
             FROM stig.tip_hit_rates),
          'every tip: utility_lower_bound = wilson_lower(hit_rate, attempts, 1.645), NULL without attempts');
SELECT ok((SELECT utility_lower_bound < hit_rate FROM stig.tip_hit_rates WHERE tip_id = :tip_e),
          'E: one perfect attempt still gets a lower bound well below its hit rate of 1');

UPDATE ctxgraph.parameters SET value = 1.0 WHERE name = 'utility.bound_z';
SELECT is((SELECT round(utility_lower_bound::numeric, 9) FROM stig.tip_hit_rates WHERE tip_id = :tip_e),
          round(ctxgraph.wilson_lower(1, 1, 1)::numeric, 9),
          'utility.bound_z is read from ctxgraph.parameters: E''s bound at z = 1 is wilson_lower(1, 1, 1) = 0.5');
UPDATE ctxgraph.parameters SET value = 1.645 WHERE name = 'utility.bound_z';

UPDATE ctxgraph.tips SET retired_at = '2026-11-25 00:00:00+00' WHERE skill = 'stig' AND id = :tip_b;
SELECT results_eq(format($$SELECT retired, retired_at FROM stig.tip_hit_rates WHERE tip_id = %s$$, :tip_b),
                  $$VALUES (true, '2026-11-25 00:00:00+00'::timestamptz)$$,
                  'B retired: retired is true and retired_at is shown');
SELECT results_eq(format($$SELECT retired, retired_at FROM stig.tip_hit_rates WHERE tip_id = %s$$, :tip_a),
                  $$VALUES (false, NULL::timestamptz)$$,
                  'A active: retired is false, retired_at NULL');

-- ---------------------------------------------------------------------------------------------
-- Pre-DEF-27 rows (both follow columns NULL) weigh 0.5 (3): hit_rate is half of outcome_hit_rate,
-- so ranking by hit_rate keeps the order ranking by outcome_hit_rate gave.
--   P1: 1.0, 1.0, 0.0 -> outcome 0.666667, hit 0.333333
--   P2: 0.0, 0.8      -> outcome 0.4,      hit 0.2
--   P3: 1.0           -> outcome 1.0,      hit 0.5
-- ---------------------------------------------------------------------------------------------
SELECT tests.make_tip('stig', 'V-103', 'P1: legacy tip') AS tip_p1,
       tests.make_tip('stig', 'V-103', 'P2: legacy tip') AS tip_p2,
       tests.make_tip('stig', 'V-103', 'P3: legacy tip') AS tip_p3
\gset
SELECT tests.make_attempt_with_retrievals('stig', 'run-1', 'V-103', 1, ARRAY[:tip_p1, :tip_p3]::bigint[], true, NULL, '2026-11-01 14:00:00+00') AS p_a1,
       tests.make_attempt_with_retrievals('stig', 'run-2', 'V-103', 1, ARRAY[:tip_p1]::bigint[], true, NULL, '2026-11-02 14:00:00+00') AS p_a2,
       tests.make_attempt_with_retrievals('stig', 'run-3', 'V-103', 1, ARRAY[:tip_p1, :tip_p2]::bigint[], false, 'clean_failure', '2026-11-03 14:00:00+00') AS p_a3,
       tests.make_attempt_with_retrievals('stig', 'run-4', 'V-103', 2, ARRAY[:tip_p2]::bigint[], true, NULL, '2026-11-04 14:00:00+00') AS p_a4
\gset

SELECT results_eq(
    format($$SELECT tip_id, round(outcome_hit_rate::numeric, 6), round(hit_rate::numeric, 6), follow_rate
               FROM stig.tip_hit_rates WHERE tip_id IN (%s, %s, %s) ORDER BY tip_id$$, :tip_p1, :tip_p2, :tip_p3),
    format($$VALUES (%s::bigint, 0.666667, 0.333333, NULL::double precision), (%s, 0.4, 0.2, NULL), (%s, 1.0, 0.5, NULL)$$,
           :tip_p1, :tip_p2, :tip_p3),
    'pre-DEF-27 tips: hit_rate = 0.5 * outcome_hit_rate, follow_rate unknown');
SELECT results_eq(
    format($$SELECT array_agg(tip_id ORDER BY hit_rate DESC) FROM stig.tip_hit_rates WHERE tip_id IN (%s, %s, %s)$$,
           :tip_p1, :tip_p2, :tip_p3),
    format($$SELECT array_agg(tip_id ORDER BY outcome_hit_rate DESC) FROM stig.tip_hit_rates WHERE tip_id IN (%s, %s, %s)$$,
           :tip_p1, :tip_p2, :tip_p3),
    'pre-DEF-27 tips rank the same by hit_rate as by outcome_hit_rate');
SELECT is((SELECT array_agg(tip_id ORDER BY hit_rate DESC) FROM stig.tip_hit_rates WHERE tip_id IN (:tip_p1, :tip_p2, :tip_p3)),
          ARRAY[:tip_p3, :tip_p1, :tip_p2]::bigint[],
          'pre-DEF-27 ranking is P3 (1.0), P1 (0.67), P2 (0.4)');

-- ---------------------------------------------------------------------------------------------
-- The core property (20): maintained aggregates == a from-scratch GROUP BY over the log.
--
-- The reference is written here, independently of refresh_tip_stats: a from-scratch GROUP BY over
-- the columns of ctxgraph.scored_retrievals (credit, follow_weight, followed, harmful: the one
-- per-retrieval definition, tested on hand-built rows in 11-contracts.sql), plus the raw log for
-- the counts that include retrievals with no outcome yet. Both sides cover every tip of every skill.
-- ---------------------------------------------------------------------------------------------
CREATE TEMP VIEW reference_hit_rates AS
WITH logged AS (
    SELECT r.skill, r.tip_id, count(*) AS retrievals, max(r.retrieved_at) AS last_retrieved_at
      FROM ctxgraph.tip_retrievals AS r
     GROUP BY r.skill, r.tip_id
),
scored AS (
    SELECT s.skill, s.tip_id,
           count(*) AS scored,
           count(DISTINCT s.attempt_key) AS attempts,
           avg(s.credit) AS outcome_hit_rate,
           avg(s.credit * s.follow_weight) AS hit_rate,
           avg(CASE WHEN s.followed THEN 1.0 ELSE 0.0 END) FILTER (WHERE s.followed IS NOT NULL) AS follow_rate,
           count(*) FILTER (WHERE s.followed AND s.harmful) AS harm
      FROM ctxgraph.scored_retrievals AS s
     GROUP BY s.skill, s.tip_id
)
SELECT t.skill, t.id AS tip_id, t.rule_id,
       coalesce(l.retrievals, 0) AS retrievals,
       coalesce(s.scored, 0) AS scored,
       coalesce(s.attempts, 0) AS attempts,
       round(s.outcome_hit_rate::numeric, 10) AS outcome_hit_rate,
       round(s.hit_rate::numeric, 10) AS hit_rate,
       round(s.follow_rate, 10) AS follow_rate,
       coalesce(s.harm, 0) AS harm,
       round(ctxgraph.wilson_lower(s.hit_rate, s.attempts, ctxgraph.param('utility.bound_z'))::numeric, 10)
           AS utility_lower_bound,
       l.last_retrieved_at,
       t.retired_at IS NOT NULL AS retired
  FROM ctxgraph.tips AS t
  LEFT JOIN logged AS l ON l.skill = t.skill AND l.tip_id = t.id
  LEFT JOIN scored AS s ON s.skill = t.skill AND s.tip_id = t.id;

CREATE TEMP VIEW maintained_hit_rates AS
SELECT skill, tip_id, rule_id, retrievals, scored, attempts,
       round(outcome_hit_rate::numeric, 10) AS outcome_hit_rate,
       round(hit_rate::numeric, 10) AS hit_rate,
       round(follow_rate::numeric, 10) AS follow_rate,
       harm,
       round(utility_lower_bound::numeric, 10) AS utility_lower_bound,
       last_retrieved_at, retired
  FROM ctxgraph.tip_hit_rates;

SELECT set_eq('SELECT * FROM maintained_hit_rates', 'SELECT * FROM reference_hit_rates',
              'after the hand-built rows: maintained aggregates = from-scratch GROUP BY');

-- 1. A new batch through log_retrievals (unlinked, no outcome yet): counts move, rates do not.
SELECT array_agg(id) AS run6_batch
  FROM ctxgraph.log_retrievals('stig', 'run-6', 'V-100', ARRAY[:tip_a, :tip_b, :tip_n]::bigint[],
                               ARRAY[0.9, 0.8, 0.7], '2026-11-06 09:59:59+00') AS b (id)
\gset
SELECT set_eq('SELECT * FROM maintained_hit_rates', 'SELECT * FROM reference_hit_rates',
              'after log_retrievals: maintained = reference');
SELECT results_eq(format('SELECT retrievals, scored FROM stig.tip_hit_rates WHERE tip_id = %s', :tip_n),
                  $$VALUES (1::bigint, 0::bigint)$$,
                  'after log_retrievals: N has 1 retrieval, 0 scored');

-- 2. Plain INSERTs straight into the partition (its own statement trigger), one statement, three
--    tips: a followed pass of N, a NaN cosine for D (weighs 0.5), an unlinked followed row of D
--    with a negative outcome, and a row with no confidence (counts as 1.0).
INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, outcome_value, outcome_confidence, retrieved_at,
                                 tip_followed_llm, tip_followed_emb)
VALUES ('run-6', :tip_n, 'V-100', 4, 1.0, 1.0, '2026-11-06 11:00:00+00', true, 0.9),
       ('run-6', :tip_d, 'V-101', 1, 0.8, 1.0, '2026-11-06 11:00:00+00', NULL, 'NaN'),
       ('run-6', :tip_d, 'V-101', 2, -0.2, 1.0, '2026-11-06 11:30:00+00', NULL, 0.75),
       ('run-6', :tip_e, 'V-102', 1, 0.5, NULL, '2026-11-06 12:00:00+00', false, NULL);
SELECT set_eq('SELECT * FROM maintained_hit_rates', 'SELECT * FROM reference_hit_rates',
              'after plain INSERTs into stig.tip_retrievals: maintained = reference');
SELECT results_eq(format('SELECT retrievals, scored, round(hit_rate::numeric, 6) FROM stig.tip_hit_rates WHERE tip_id = %s', :tip_n),
                  $$VALUES (2::bigint, 1::bigint, 1.0)$$,
                  'after the plain INSERT: N has 2 retrievals, 1 scored, hit_rate 1');

-- 3. The run-6 batch gets its attempt and outcome through the write path (a first-try pass).
SELECT tests.make_attempt('stig', 'run-6', 'V-100', 1, '2026-11-06 10:00:00+00') AS a6 \gset
SELECT ctxgraph.update_retrieval_attempt_ids('stig', :'run6_batch'::bigint[], :a6) AS linked6 \gset
SELECT ctxgraph.record_outcome('stig', :a6, true) AS recorded6 \gset
SELECT set_eq('SELECT * FROM maintained_hit_rates', 'SELECT * FROM reference_hit_rates',
              'after record_outcome: maintained = reference');
SELECT results_eq(format('SELECT scored, attempts, round(outcome_hit_rate::numeric, 6) FROM stig.tip_hit_rates WHERE tip_id = %s', :tip_a),
                  $$VALUES (5::bigint, 5::bigint, 0.52)$$,
                  'after record_outcome: A has 5 scored attempts, outcome rate (1.6 + 1.0) / 5 = 0.52');

-- 4. The scorer's follow-column updates, straight on the partition.
UPDATE stig.tip_retrievals SET tip_followed_llm = true, tip_followed_emb = 0.85,
                               tip_followed_computed_at = '2026-11-29 12:00:00+00'
 WHERE run_id = 'run-6' AND tip_id = :tip_a;
UPDATE stig.tip_retrievals SET tip_followed_llm = NULL, tip_followed_emb = 'NaN' WHERE run_id = 'run-6' AND tip_id = :tip_b;
SELECT set_eq('SELECT * FROM maintained_hit_rates', 'SELECT * FROM reference_hit_rates',
              'after UPDATE ... SET tip_followed_llm/emb on stig.tip_retrievals: maintained = reference');
SELECT results_eq(format('SELECT round(hit_rate::numeric, 6), round(follow_rate::numeric, 6) FROM stig.tip_hit_rates WHERE tip_id = %s', :tip_a),
                  $$VALUES (0.36, 0.8)$$,
                  'after the follow update: A hit_rate (0.8 + 1.0) / 5 = 0.36, follow rate 4/5');

-- 5. A correction: run-6's attempt re-recorded as a health failure.
SELECT ctxgraph.record_outcome('stig', :a6, false, 'health_failure') AS rerecorded6 \gset
SELECT set_eq('SELECT * FROM maintained_hit_rates', 'SELECT * FROM reference_hit_rates',
              'after re-recording an outcome (pass corrected to health failure): maintained = reference');
SELECT results_eq(format('SELECT round(outcome_hit_rate::numeric, 6), harm FROM stig.tip_hit_rates WHERE tip_id = %s', :tip_a),
                  $$VALUES (0.28, 2::bigint)$$,
                  'after the correction: A outcome rate (1.6 - 0.2) / 5 = 0.28, harm 2');

-- 6. An attempt's failure mode changed directly (run-4: health failure -> clean failure; its
--    stored outcome stays -0.2, but nothing broke, so A's harm from it goes).
UPDATE stig.attempts SET failure_mode = 'clean_failure' WHERE id = :a4;
SELECT set_eq('SELECT * FROM maintained_hit_rates', 'SELECT * FROM reference_hit_rates',
              'after UPDATE stig.attempts SET failure_mode: maintained = reference');
SELECT is((SELECT harm FROM stig.tip_hit_rates WHERE tip_id = :tip_a), 1::bigint,
          'after the failure-mode change: A harm 2 -> 1');

-- 7. Outcomes reverted (run-1's rows no longer scored).
UPDATE stig.tip_retrievals SET outcome_value = NULL, outcome_confidence = NULL WHERE run_id = 'run-1';
SELECT set_eq('SELECT * FROM maintained_hit_rates', 'SELECT * FROM reference_hit_rates',
              'after UPDATE ... SET outcome_value = NULL: maintained = reference');
SELECT results_eq(format('SELECT retrievals, scored, attempts FROM stig.tip_hit_rates WHERE tip_id = %s', :tip_e),
                  $$VALUES (3::bigint, 1::bigint, 1::bigint)$$,
                  'after reverting run-1: E keeps 3 retrievals but only the run-6 row is scored');

-- 8. Retrievals deleted (all of run-2).
DELETE FROM stig.tip_retrievals WHERE run_id = 'run-2';
SELECT set_eq('SELECT * FROM maintained_hit_rates', 'SELECT * FROM reference_hit_rates',
              'after DELETE FROM stig.tip_retrievals: maintained = reference');
SELECT is((SELECT retrievals FROM stig.tip_hit_rates WHERE tip_id = :tip_d), 3::bigint,
          'after the delete: D has 3 retrievals left (run-1 and run-6)');

-- 9. A retrieval moved to another tip, through the parent table: both tips are refreshed.
UPDATE ctxgraph.tip_retrievals SET tip_id = :tip_n
 WHERE skill = 'stig' AND id = (SELECT min(id) FROM stig.tip_retrievals WHERE tip_id = :tip_p1);
SELECT set_eq('SELECT * FROM maintained_hit_rates', 'SELECT * FROM reference_hit_rates',
              'after moving a retrieval to another tip: maintained = reference');

-- 10. A follow.* parameter changed: every row is re-weighed (judge ignored 0.0 -> 0.3, threshold 0.6 -> 0.8).
UPDATE ctxgraph.parameters SET value = 0.3 WHERE name = 'follow.weight.judge_ignored';
UPDATE ctxgraph.parameters SET value = 0.8 WHERE name = 'follow.emb_threshold';
SELECT set_eq('SELECT * FROM maintained_hit_rates', 'SELECT * FROM reference_hit_rates',
              'after changing follow.weight.judge_ignored and follow.emb_threshold: maintained = reference');
SELECT results_eq(format('SELECT round(hit_rate::numeric, 6), round(follow_rate::numeric, 6) FROM stig.tip_hit_rates WHERE tip_id = %s', :tip_b),
                  $$VALUES (-0.08, 0.0)$$,
                  'after the parameter change: B''s scored rows are run-4 (-0.2, judge ignored, now 0.3) and run-6 (-0.2, NaN cosine, 0.5): hit_rate (-0.06 - 0.1) / 2 = -0.08, follow rate 0/1');

-- ---------------------------------------------------------------------------------------------
-- Cross-skill (8): cve rows live in cve's views only.
-- ---------------------------------------------------------------------------------------------
SELECT tests.make_tip('cve', 'CVE-2024-3094', 'X: downgrade xz-utils to 5.4') AS tip_x \gset
SELECT tests.make_judged_attempt('cve', 'run-6', 'CVE-2024-3094', 1, ARRAY[:tip_x]::bigint[], true, NULL,
                                 '2026-11-06 15:00:00+00', true, 0.9) AS ax1,
       tests.make_judged_attempt('cve', 'run-6', 'CVE-2024-3094', 2, ARRAY[:tip_x]::bigint[], false, 'clean_failure',
                                 '2026-11-06 15:20:00+00', false, 0.3) AS ax2
\gset
INSERT INTO cve.tip_retrievals (run_id, tip_id, rule_id, rank, outcome_value, outcome_confidence, retrieved_at)
VALUES ('run-6', :tip_x, 'CVE-2024-3094', 1, 1.0, 1.0, '2026-11-06 16:00:00+00');

SELECT set_eq('SELECT * FROM maintained_hit_rates', 'SELECT * FROM reference_hit_rates',
              'with cve rows too: maintained = reference for every skill');
SELECT results_eq(format($$SELECT retrievals, scored, attempts, round(outcome_hit_rate::numeric, 6), round(hit_rate::numeric, 6)
                             FROM cve.tip_hit_rates WHERE tip_id = %s$$, :tip_x),
                  $$VALUES (3::bigint, 3::bigint, 3::bigint, 0.666667, 0.5)$$,
                  'cve X: binary outcomes 1, 0, 1 -> outcome rate 2/3; weights 1, 0.3 (judge ignored, as set above), 0.5 -> (1 + 0 + 0.5) / 3');
SELECT is_empty(format('SELECT 1 FROM stig.tip_hit_rates WHERE tip_id = %s', :tip_x),
                'the cve tip never appears in stig.tip_hit_rates');
SELECT is_empty(format('SELECT 1 FROM cve.tip_hit_rates WHERE tip_id IN (%s, %s)', :tip_a, :tip_b),
                'stig tips never appear in cve.tip_hit_rates');
SELECT set_eq($$SELECT * FROM stig.tip_hit_rates$$,
              $$SELECT tip_id, rule_id, retrievals, scored, attempts, outcome_hit_rate, hit_rate, follow_rate, harm,
                       utility_lower_bound, last_retrieved_at, retired, retired_at, effect, effect_lower_bound,
                       effect_upper_bound
                  FROM ctxgraph.tip_hit_rates WHERE skill = 'stig'$$,
              'stig.tip_hit_rates is exactly ctxgraph.tip_hit_rates filtered to stig');
SELECT set_eq($$SELECT * FROM cve.tip_hit_rates$$,
              $$SELECT tip_id, rule_id, retrievals, scored, attempts, outcome_hit_rate, hit_rate, follow_rate, harm,
                       utility_lower_bound, last_retrieved_at, retired, retired_at, effect, effect_lower_bound,
                       effect_upper_bound
                  FROM ctxgraph.tip_hit_rates WHERE skill = 'cve'$$,
              'cve.tip_hit_rates is exactly ctxgraph.tip_hit_rates filtered to cve');
SELECT is_empty($$SELECT 1 FROM ctxgraph.tip_stats WHERE skill = 'stig' AND tip_id IN (SELECT id FROM cve.tips)$$,
                'no stig stats row for a cve tip');

-- A full rebuild changes nothing: the triggers kept the stats exact.
CREATE TEMP TABLE before_rebuild AS SELECT * FROM maintained_hit_rates;
SELECT ctxgraph.refresh_tip_stats() AS rebuilt \gset
SELECT set_eq('SELECT * FROM maintained_hit_rates', 'SELECT * FROM before_rebuild',
              'refresh_tip_stats() from scratch changes nothing');

SELECT * FROM finish();
ROLLBACK;
