-- Judge/embedding agreement (follow_agreement: confusion counts, Cohen's kappa, the best
-- threshold) and the stark disagreements (follow_anomalies), on retrieval rows written straight
-- into the log with hand-picked verdicts and cosines. Floating values are compared after
-- round(..., 6).
BEGIN;
SELECT plan(29);

-- ---------------------------------------------------------------------------------------------
-- Contract (4)
-- ---------------------------------------------------------------------------------------------
SELECT columns_are('ctxgraph', 'follow_agreement',
                   ARRAY['skill', 'judged', 'both_followed', 'judge_only_followed', 'emb_only_followed', 'both_ignored',
                         'agreement', 'kappa', 'threshold', 'best_threshold', 'best_kappa'],
                   'ctxgraph.follow_agreement has the report''s columns');
SELECT columns_are('stig', 'follow_agreement',
                   ARRAY['judged', 'both_followed', 'judge_only_followed', 'emb_only_followed', 'both_ignored',
                         'agreement', 'kappa', 'threshold', 'best_threshold', 'best_kappa'],
                   'stig.follow_agreement has the same columns but skill');
SELECT columns_are('ctxgraph', 'follow_anomalies',
                   ARRAY['skill', 'retrieval_id', 'run_id', 'rule_id', 'attempt_id', 'tip_id', 'body',
                         'tip_followed_llm', 'tip_followed_emb', 'kind'],
                   'ctxgraph.follow_anomalies has the report''s columns');
SELECT columns_are('stig', 'follow_anomalies',
                   ARRAY['retrieval_id', 'run_id', 'rule_id', 'attempt_id', 'tip_id', 'body',
                         'tip_followed_llm', 'tip_followed_emb', 'kind'],
                   'stig.follow_anomalies has the same columns but skill');

SELECT tests.make_tip('stig', 'V-900', 'T: set ClientAliveInterval 600 in sshd_config') AS tip_t,
       tests.make_tip('cve', 'CVE-2024-6387', 'C: set LoginGraceTime 0')              AS tip_c
\gset

-- ---------------------------------------------------------------------------------------------
-- follow_agreement (12)
-- ---------------------------------------------------------------------------------------------
SELECT results_eq($$SELECT judged, both_followed, judge_only_followed, emb_only_followed, both_ignored,
                           agreement, kappa, threshold, best_threshold, best_kappa
                      FROM stig.follow_agreement$$,
                  $$VALUES (0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, NULL::double precision,
                            NULL::double precision, 0.6::double precision, NULL::double precision, NULL::double precision)$$,
                  'no judged rows yet: one stig row, zero counts, no agreement, no kappa, no best threshold');

-- Ten rows with both legs, at the default threshold 0.6:
--   judge followed: cosines 0.9, 0.8, 0.75, 0.7 (>= 0.6: both followed) and 0.4 (judge only)
--   judge ignored:  cosine 0.65 (embedding only) and 0.5, 0.3, 0.2, 0.1 (both ignored)
-- -> 4 / 1 / 1 / 4: agreement 8/10 = 0.8; each leg says yes 5 times, expected agreement
--    (5*5 + 5*5)/100 = 0.5, kappa (0.8 - 0.5) / 0.5 = 0.6.
-- Four rows missing a leg are left out: judge true with a NaN cosine, judge false with no cosine,
-- cosine 0.95 with no judge, and a row with neither.
CREATE TEMP TABLE stig_rows AS
SELECT tests.make_retrieval('stig', 'run-1', 'V-900', :tip_t, v.llm, v.emb) AS id
  FROM (VALUES (true, 0.9::double precision), (true, 0.8), (true, 0.75), (true, 0.7), (true, 0.4),
               (false, 0.65), (false, 0.5), (false, 0.3), (false, 0.2), (false, 0.1),
               (true, 'NaN'), (false, NULL), (NULL, 0.95), (NULL, NULL)) AS v (llm, emb);

SELECT results_eq($$SELECT judged, both_followed, judge_only_followed, emb_only_followed, both_ignored FROM stig.follow_agreement$$,
                  $$VALUES (10::bigint, 4::bigint, 1::bigint, 1::bigint, 4::bigint)$$,
                  'confusion counts 4 / 1 / 1 / 4 over the 10 rows with both legs (NaN and missing legs left out)');
SELECT results_eq($$SELECT round(agreement::numeric, 6), round(kappa::numeric, 6), threshold FROM stig.follow_agreement$$,
                  $$VALUES (0.8, 0.6, 0.6::double precision)$$,
                  'agreement 0.8, kappa 0.6 at threshold 0.6');
-- The sweep: at threshold 0.7 the embedding says yes to 0.9, 0.8, 0.75, 0.7, all judge-followed:
-- 4 / 1 / 0 / 5, observed 0.9, expected (5*4 + 5*6)/100 = 0.5, kappa 0.8. No other judged
-- cosine does as well (0.65 and 0.4 give 0.6, 0.75 gives 0.6, 0.5 gives 0.4).
SELECT results_eq($$SELECT best_threshold, round(best_kappa::numeric, 6) FROM stig.follow_agreement$$,
                  $$VALUES (0.7::double precision, 0.8)$$,
                  'best_threshold 0.7 with best_kappa 0.8');

UPDATE ctxgraph.parameters SET value = 0.7 WHERE name = 'follow.emb_threshold';
SELECT results_eq($$SELECT both_followed, judge_only_followed, emb_only_followed, both_ignored,
                           round(agreement::numeric, 6), round(kappa::numeric, 6), threshold,
                           best_threshold, round(best_kappa::numeric, 6)
                      FROM stig.follow_agreement$$,
                  $$VALUES (4::bigint, 1::bigint, 0::bigint, 5::bigint, 0.9, 0.8, 0.7::double precision, 0.7::double precision, 0.8)$$,
                  'follow.emb_threshold = 0.7 is read from parameters: 4 / 1 / 0 / 5, agreement 0.9, kappa 0.8; the best threshold does not move');
UPDATE ctxgraph.parameters SET value = 0.6 WHERE name = 'follow.emb_threshold';

-- cve: the judge's yes and no are separated perfectly by 0.45, which the fixed 0.6 misses.
--   judge followed: 0.45, 0.5, 0.55; judge ignored: 0.1, 0.3, 0.42.
-- At 0.6: 0 / 3 / 0 / 3, agreement 0.5; the embedding never says yes, so expected agreement
-- is (3*0 + 3*6)/36 = 0.5 and kappa 0. At 0.45: 3 / 0 / 0 / 3, kappa 1.
CREATE TEMP TABLE cve_rows AS
SELECT tests.make_retrieval('cve', 'run-1', 'CVE-2024-6387', :tip_c, v.llm, v.emb) AS id
  FROM (VALUES (true, 0.45::double precision), (true, 0.5), (true, 0.55),
               (false, 0.1), (false, 0.3), (false, 0.42)) AS v (llm, emb);

SELECT results_eq($$SELECT judged, both_followed, judge_only_followed, emb_only_followed, both_ignored,
                           round(agreement::numeric, 6), round(kappa::numeric, 6)
                      FROM cve.follow_agreement$$,
                  $$VALUES (6::bigint, 0::bigint, 3::bigint, 0::bigint, 3::bigint, 0.5, 0.0)$$,
                  'cve at threshold 0.6: 0 / 3 / 0 / 3, agreement 0.5, kappa 0');
SELECT results_eq($$SELECT best_threshold, round(best_kappa::numeric, 6) FROM cve.follow_agreement$$,
                  $$VALUES (0.45::double precision, 1.0)$$,
                  'cve: best_threshold 0.45 separates the judge''s verdicts perfectly, best_kappa 1');
SELECT results_eq($$SELECT judged, both_followed, best_threshold FROM stig.follow_agreement$$,
                  $$VALUES (10::bigint, 4::bigint, 0.7::double precision)$$,
                  'stig''s figures are untouched by cve''s rows');
SELECT results_eq($$SELECT skill, judged FROM ctxgraph.follow_agreement ORDER BY skill$$,
                  $$VALUES ('cve', 6::bigint), ('stig', 10::bigint)$$,
                  'ctxgraph.follow_agreement has one row per skill');
SELECT set_eq($$SELECT * FROM stig.follow_agreement$$,
              $$SELECT judged, both_followed, judge_only_followed, emb_only_followed, both_ignored, agreement, kappa,
                       threshold, best_threshold, best_kappa
                  FROM ctxgraph.follow_agreement WHERE skill = 'stig'$$,
              'stig.follow_agreement is ctxgraph.follow_agreement filtered to stig');

-- A NaN cosine is never a candidate threshold; nor is a row without a judge.
SELECT tests.make_retrieval('stig', 'run-1', 'V-900', :tip_t, NULL, 0.05) AS no_judge \gset
SELECT results_eq($$SELECT judged, best_threshold, round(best_kappa::numeric, 6) FROM stig.follow_agreement$$,
                  $$VALUES (10::bigint, 0.7::double precision, 0.8)$$,
                  'a cosine without a judge verdict changes neither the counts nor the sweep');
SELECT ok((SELECT best_threshold <> 'NaN'::double precision FROM stig.follow_agreement),
          'the NaN row is not a candidate threshold');

-- ---------------------------------------------------------------------------------------------
-- follow_anomalies (9). Defaults: judge followed with cosine < 0.15, judge ignored with cosine
-- >= 0.85. None of the agreement rows above qualifies (lowest judge-followed cosine 0.4,
-- highest judge-ignored 0.65).
-- ---------------------------------------------------------------------------------------------
SELECT is_empty($$SELECT 1 FROM stig.follow_anomalies$$,
                'no anomaly among the agreement rows (NaN, missing legs and no-judge rows never qualify)');

-- Run run-2, rule V-900, in this order:
--   a1 judge followed, cosine 0.1    -> anomaly (near zero)
--   a2 judge followed, cosine 0.15   -> not (the bound is strict: < 0.15)
--   a3 judge followed, cosine 0.14   -> anomaly
--   a4 judge ignored,  cosine 0.85   -> anomaly (>= 0.85)
--   a5 judge ignored,  cosine 0.84   -> not
--   a6 judge followed, cosine -0.2   -> anomaly
--   a7 no judge,       cosine 0.95   -> not
--   a8 no judge,       cosine 0.01   -> not
--   a9 judge ignored,  NaN cosine    -> not
--   a10 judge followed, no cosine    -> not
SELECT tests.make_retrieval('stig', 'run-2', 'V-900', :tip_t, true, 0.1) AS a1,
       tests.make_retrieval('stig', 'run-2', 'V-900', :tip_t, true, 0.15) AS a2,
       tests.make_retrieval('stig', 'run-2', 'V-900', :tip_t, true, 0.14) AS a3,
       tests.make_retrieval('stig', 'run-2', 'V-900', :tip_t, false, 0.85) AS a4,
       tests.make_retrieval('stig', 'run-2', 'V-900', :tip_t, false, 0.84) AS a5,
       tests.make_retrieval('stig', 'run-2', 'V-900', :tip_t, true, -0.2) AS a6,
       tests.make_retrieval('stig', 'run-2', 'V-900', :tip_t, NULL, 0.95) AS a7,
       tests.make_retrieval('stig', 'run-2', 'V-900', :tip_t, NULL, 0.01) AS a8,
       tests.make_retrieval('stig', 'run-2', 'V-900', :tip_t, false, 'NaN') AS a9,
       tests.make_retrieval('stig', 'run-2', 'V-900', :tip_t, true, NULL) AS a10
\gset

SELECT results_eq($$SELECT retrieval_id, kind, tip_followed_llm, tip_followed_emb FROM stig.follow_anomalies$$,
                  format($$VALUES (%s::bigint, 'judge followed, cosine near zero', true, 0.1::double precision),
                                  (%s, 'judge followed, cosine near zero', true, 0.14),
                                  (%s, 'judge ignored, cosine high', false, 0.85),
                                  (%s, 'judge followed, cosine near zero', true, -0.2)$$, :a1, :a3, :a4, :a6),
                  'follow_anomalies lists a1, a3, a4, a6 only, each with its kind');
SELECT results_eq(format($$SELECT run_id, rule_id, attempt_id, tip_id, body FROM stig.follow_anomalies WHERE retrieval_id = %s$$, :a1),
                  format($$VALUES ('run-2', 'V-900', NULL::bigint, %s::bigint, 'T: set ClientAliveInterval 600 in sshd_config')$$, :tip_t),
                  'an anomaly row carries the run, rule, attempt and tip text for review');
SELECT is_empty(format($$SELECT 1 FROM stig.follow_anomalies WHERE retrieval_id IN (%s, %s, %s, %s, %s, %s)$$,
                       :a2, :a5, :a7, :a8, :a9, :a10),
                'not anomalies: the 0.15 and 0.84 boundaries, rows without a judge, a NaN cosine, a missing cosine');

UPDATE ctxgraph.parameters SET value = 0.2 WHERE name = 'anomaly.low_cosine';
SELECT ok((SELECT count(*) FROM stig.follow_anomalies WHERE retrieval_id = :a2) = 1,
          'anomaly.low_cosine = 0.2 is read from parameters: a2 (0.15) becomes an anomaly');
UPDATE ctxgraph.parameters SET value = 0.15 WHERE name = 'anomaly.low_cosine';
UPDATE ctxgraph.parameters SET value = 0.8 WHERE name = 'anomaly.high_cosine';
SELECT ok((SELECT count(*) FROM stig.follow_anomalies WHERE retrieval_id = :a5) = 1,
          'anomaly.high_cosine = 0.8 is read from parameters: a5 (0.84) becomes an anomaly');
UPDATE ctxgraph.parameters SET value = 0.85 WHERE name = 'anomaly.high_cosine';

-- Per skill.
SELECT tests.make_retrieval('cve', 'run-2', 'CVE-2024-6387', :tip_c, true, 0.05) AS c1 \gset
SELECT results_eq($$SELECT retrieval_id, kind FROM cve.follow_anomalies$$,
                  format($$VALUES (%s::bigint, 'judge followed, cosine near zero')$$, :c1),
                  'cve.follow_anomalies lists the cve anomaly');
SELECT is_empty(format($$SELECT 1 FROM stig.follow_anomalies WHERE retrieval_id = %s$$, :c1),
                'the cve anomaly never appears in stig.follow_anomalies');
SELECT results_eq($$SELECT * FROM stig.follow_anomalies$$,
                  $$SELECT retrieval_id, run_id, rule_id, attempt_id, tip_id, body, tip_followed_llm, tip_followed_emb, kind
                      FROM ctxgraph.follow_anomalies WHERE skill = 'stig'$$,
                  'stig.follow_anomalies is ctxgraph.follow_anomalies filtered to stig, in the same order');

-- The helpers the agreement sweep and every scan of the log call per row are inlined by the
-- planner (a function call per row cost most of follow_agreement's time): their names do not
-- survive into the plan of a query over column values.
SELECT unalike(tests.plan_of($$SELECT ctxgraph.cohen_kappa(g, g + 1, g + 2, g + 3) FROM generate_series(1::bigint, 3) AS g$$, 'VERBOSE, COSTS OFF'),
               '%cohen_kappa%', 'cohen_kappa is inlined');
SELECT unalike(tests.plan_of($$SELECT ctxgraph.known_cosine(g::double precision) FROM generate_series(1, 3) AS g$$, 'VERBOSE, COSTS OFF'),
               '%known_cosine%', 'known_cosine is inlined');

-- The sweep runs over bins of 0.001 of cosine, each bin's smallest cosine the candidate. cve now
-- holds judge yes at 0.05, 0.45, 0.5, 0.55 and no at 0.1, 0.3, 0.42; a judge-ignored row at 0.4505
-- shares 0.45's bin, so the candidate 0.45 calls 3 yes and 1 no followed (n 8: observed 6/8,
-- expected 0.5, kappa 0.5); 0.5 ties at 0.5 and the smaller candidate is kept; 0.4505, inside the
-- bin, is no candidate.
SELECT tests.make_retrieval('cve', 'run-1', 'CVE-2024-6387', :tip_c, false, 0.4505) AS binned \gset
SELECT results_eq($$SELECT judged, best_threshold, round(best_kappa::numeric, 6) FROM cve.follow_agreement$$,
                  $$VALUES (8::bigint, 0.45::double precision, 0.5)$$,
                  'a cosine inside a bin counts with the bin: best_threshold 0.45 (0.5 ties), best_kappa 0.5');
SELECT unalike(tests.plan_of($$SELECT best_threshold FROM ctxgraph.follow_agreement$$, 'VERBOSE, COSTS OFF'),
               '%Sort Key: %.emb DESC%', 'the sweep sorts bins, not the judged rows by cosine');

SELECT * FROM finish();
ROLLBACK;
