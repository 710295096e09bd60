-- The misleading-tip detector (ADR-0019 audit section 4) and the harmful-tips report, on small
-- hand-built tips a reader can check by eye. Each tip has its own rule and attempts; every
-- attempt retrieves only that tip, and the follow verdict is the same on all its rows unless said.
-- Floating values are compared after round(..., 6).
BEGIN;
SELECT plan(21);

-- ---------------------------------------------------------------------------------------------
-- Contract (4)
-- ---------------------------------------------------------------------------------------------
SELECT columns_are('ctxgraph', 'misleading_tips',
                   ARRAY['skill', 'tip_id', 'rule_id', 'body', 'attempts', 'outcome_hit_rate', 'hit_rate',
                         'follow_rate', 'credit_gap', 'retired'],
                   'ctxgraph.misleading_tips has the detector''s columns');
SELECT columns_are('stig', 'misleading_tips',
                   ARRAY['tip_id', 'rule_id', 'body', 'attempts', 'outcome_hit_rate', 'hit_rate',
                         'follow_rate', 'credit_gap', 'retired'],
                   'stig.misleading_tips has the same columns but skill');
SELECT columns_are('ctxgraph', 'harmful_tips',
                   ARRAY['skill', 'tip_id', 'rule_id', 'body', 'harm', 'attempts', 'harm_rate', 'outcome_hit_rate',
                         'hit_rate', 'follow_rate', 'retired'],
                   'ctxgraph.harmful_tips has the report''s columns');
SELECT columns_are('stig', 'harmful_tips',
                   ARRAY['tip_id', 'rule_id', 'body', 'harm', 'attempts', 'harm_rate', 'outcome_hit_rate',
                         'hit_rate', 'follow_rate', 'retired'],
                   'stig.harmful_tips has the same columns but skill');

-- ---------------------------------------------------------------------------------------------
-- Misleading-tip fixtures. Defaults: misleading.min_attempts 3, min_outcome_hit_rate 0.6,
-- max_follow_rate 0.34. Passes on attempt 1 score 1.0, on attempt 2 0.8; clean failures 0.0.
--
--   tip  runs 1..3 (attempt no., result, verdict)       attempts outcome  hit     follow  listed?
--   M1   #1 pass ignored x3                              3        1.0      0       0       yes, gap 1.0
--   M2   #1 pass ignored x2, #1 pass followed            3        1.0      1/3     1/3     yes, gap 2/3
--   M3   #1 pass ignored x2                              2        1.0      0       0       no: 2 attempts
--   M4   #1 pass, #1 clean fail x2, all ignored          3        1/3      0       0       no: outcome low
--   M5   #1 pass followed x2, #1 pass ignored            3        1.0      2/3     2/3     no: followed
--   M6   #1 pass x3, no verdicts (pre-DEF-27)            3        1.0      0.5     NULL    no: follow unknown
--   M7   #1 pass x3, cosine 0.3 only (no judge)          3        1.0      0       0       yes, gap 1.0
--   M8   #1 pass, #2 pass x2, ignored                    3        2.6/3    0       0       yes, gap 0.866667
-- ---------------------------------------------------------------------------------------------
SELECT tests.make_tip('stig', 'V-301', 'M1: run update-crypto-policies, never edit ssh_config') AS m1,
       tests.make_tip('stig', 'V-302', 'M2: set umask 077 in /etc/profile')                   AS m2,
       tests.make_tip('stig', 'V-303', 'M3: restart auditd after editing rules')              AS m3,
       tests.make_tip('stig', 'V-304', 'M4: disable ctrl-alt-del with systemctl mask')        AS m4,
       tests.make_tip('stig', 'V-305', 'M5: set PermitRootLogin no')                          AS m5,
       tests.make_tip('stig', 'V-306', 'M6: legacy advice from run 2')                        AS m6,
       tests.make_tip('stig', 'V-307', 'M7: enable fapolicyd')                                AS m7,
       tests.make_tip('stig', 'V-308', 'M8: chmod 0600 the host keys')                        AS m8
\gset

CREATE TEMP TABLE made AS
SELECT tests.make_judged_attempt('stig', v.run_id, v.rule_id, v.n, ARRAY[v.tip]::bigint[], v.passed, v.mode,
                                 v.at::timestamptz, v.llm, v.emb) AS attempt_id
  FROM (VALUES
        ('run-1', 'V-301', 1, :m1, true, NULL, '2026-11-01 10:00:00+00', false, 0.2::double precision),
        ('run-2', 'V-301', 1, :m1, true, NULL, '2026-11-02 10:00:00+00', false, 0.2),
        ('run-3', 'V-301', 1, :m1, true, NULL, '2026-11-03 10:00:00+00', false, 0.2),
        ('run-1', 'V-302', 1, :m2, true, NULL, '2026-11-01 10:00:00+00', false, 0.2),
        ('run-2', 'V-302', 1, :m2, true, NULL, '2026-11-02 10:00:00+00', false, 0.2),
        ('run-3', 'V-302', 1, :m2, true, NULL, '2026-11-03 10:00:00+00', true, 0.8),
        ('run-1', 'V-303', 1, :m3, true, NULL, '2026-11-01 10:00:00+00', false, 0.2),
        ('run-2', 'V-303', 1, :m3, true, NULL, '2026-11-02 10:00:00+00', false, 0.2),
        ('run-1', 'V-304', 1, :m4, true, NULL, '2026-11-01 10:00:00+00', false, 0.2),
        ('run-2', 'V-304', 1, :m4, false, 'clean_failure', '2026-11-02 10:00:00+00', false, 0.2),
        ('run-3', 'V-304', 1, :m4, false, 'clean_failure', '2026-11-03 10:00:00+00', false, 0.2),
        ('run-1', 'V-305', 1, :m5, true, NULL, '2026-11-01 10:00:00+00', true, 0.8),
        ('run-2', 'V-305', 1, :m5, true, NULL, '2026-11-02 10:00:00+00', true, 0.8),
        ('run-3', 'V-305', 1, :m5, true, NULL, '2026-11-03 10:00:00+00', false, 0.2),
        ('run-1', 'V-306', 1, :m6, true, NULL, '2026-11-01 10:00:00+00', NULL, NULL),
        ('run-2', 'V-306', 1, :m6, true, NULL, '2026-11-02 10:00:00+00', NULL, NULL),
        ('run-3', 'V-306', 1, :m6, true, NULL, '2026-11-03 10:00:00+00', NULL, NULL),
        ('run-1', 'V-307', 1, :m7, true, NULL, '2026-11-01 10:00:00+00', NULL, 0.3),
        ('run-2', 'V-307', 1, :m7, true, NULL, '2026-11-02 10:00:00+00', NULL, 0.3),
        ('run-3', 'V-307', 1, :m7, true, NULL, '2026-11-03 10:00:00+00', NULL, 0.3),
        ('run-1', 'V-308', 1, :m8, true, NULL, '2026-11-01 10:00:00+00', false, 0.2),
        ('run-2', 'V-308', 2, :m8, true, NULL, '2026-11-02 10:00:00+00', false, 0.2),
        ('run-3', 'V-308', 2, :m8, true, NULL, '2026-11-03 10:00:00+00', false, 0.2)
       ) AS v (run_id, rule_id, n, tip, passed, mode, at, llm, emb);

-- ---------------------------------------------------------------------------------------------
-- misleading_tips (11)
-- ---------------------------------------------------------------------------------------------
SELECT results_eq(
    $$SELECT tip_id, attempts, round(outcome_hit_rate::numeric, 6), round(hit_rate::numeric, 6),
             round(follow_rate::numeric, 6), round(credit_gap::numeric, 6), retired
        FROM stig.misleading_tips$$,
    format($$VALUES (%s::bigint, 3::bigint, 1.0, 0.0, 0.0, 1.0, false),
                    (%s, 3, 1.0, 0.0, 0.0, 1.0, false),
                    (%s, 3, 0.866667, 0.0, 0.0, 0.866667, false),
                    (%s, 3, 1.0, 0.333333, 0.333333, 0.666667, false)$$, :m1, :m7, :m8, :m2),
    'misleading_tips lists M1, M7 (gap 1.0, ties by tip id), M8 (gap 0.87), M2 (gap 0.67), in that order');
SELECT results_eq(
    format($$SELECT rule_id, body FROM stig.misleading_tips WHERE tip_id = %s$$, :m1),
    $$VALUES ('V-301', 'M1: run update-crypto-policies, never edit ssh_config')$$,
    'misleading_tips shows the tip''s rule and text for the analyst');
SELECT is_empty(
    format($$SELECT 1 FROM stig.misleading_tips WHERE tip_id IN (%s, %s, %s, %s)$$, :m3, :m4, :m5, :m6),
    'not listed: M3 (2 attempts), M4 (outcome 1/3), M5 (follow 2/3), M6 (no verdicts, follow rate unknown)');

-- Thresholds are read from ctxgraph.parameters.
UPDATE ctxgraph.parameters SET value = 2 WHERE name = 'misleading.min_attempts';
SELECT results_eq($$SELECT tip_id FROM stig.misleading_tips$$,
                  format($$VALUES (%s::bigint), (%s), (%s), (%s), (%s)$$, :m1, :m3, :m7, :m8, :m2),
                  'misleading.min_attempts = 2: M3 (2 attempts, gap 1.0) joins, between M1 and M7 by tip id');
UPDATE ctxgraph.parameters SET value = 3 WHERE name = 'misleading.min_attempts';

UPDATE ctxgraph.parameters SET value = 0.3 WHERE name = 'misleading.max_follow_rate';
SELECT results_eq($$SELECT tip_id FROM stig.misleading_tips$$,
                  format($$VALUES (%s::bigint), (%s), (%s)$$, :m1, :m7, :m8),
                  'misleading.max_follow_rate = 0.3: M2 (follow rate 1/3) drops out');
UPDATE ctxgraph.parameters SET value = 0.34 WHERE name = 'misleading.max_follow_rate';

UPDATE ctxgraph.parameters SET value = 0.9 WHERE name = 'misleading.min_outcome_hit_rate';
SELECT results_eq($$SELECT tip_id FROM stig.misleading_tips$$,
                  format($$VALUES (%s::bigint), (%s), (%s)$$, :m1, :m7, :m2),
                  'misleading.min_outcome_hit_rate = 0.9: M8 (outcome 0.87) drops out');
UPDATE ctxgraph.parameters SET value = 0.3 WHERE name = 'misleading.min_outcome_hit_rate';
SELECT results_eq($$SELECT tip_id FROM stig.misleading_tips$$,
                  format($$VALUES (%s::bigint), (%s), (%s), (%s), (%s)$$, :m1, :m7, :m8, :m2, :m4),
                  'misleading.min_outcome_hit_rate = 0.3: M4 (outcome 1/3, hit 0, gap 1/3) joins, last by credit gap');
UPDATE ctxgraph.parameters SET value = 0.6 WHERE name = 'misleading.min_outcome_hit_rate';

-- A retired tip stays visible, flagged.
UPDATE ctxgraph.tips SET retired_at = '2026-11-10 00:00:00+00' WHERE skill = 'stig' AND id = :m8;
SELECT results_eq(format($$SELECT retired FROM stig.misleading_tips WHERE tip_id = %s$$, :m8),
                  $$VALUES (true)$$,
                  'a retired misleading tip stays in the report with retired = true');

-- Per skill: a cve tip with the same shape (3 binary passes, ignored) is cve's, not stig's.
SELECT tests.make_tip('cve', 'CVE-2024-6387', 'MC: set LoginGraceTime 0') AS mc \gset
CREATE TEMP TABLE made_cve AS
SELECT tests.make_judged_attempt('cve', v.run_id, 'CVE-2024-6387', 1, ARRAY[:mc]::bigint[], true, NULL,
                                 v.at::timestamptz, false, 0.1) AS attempt_id
  FROM (VALUES ('run-1', '2026-11-01 10:00:00+00'), ('run-2', '2026-11-02 10:00:00+00'),
               ('run-3', '2026-11-03 10:00:00+00')) AS v (run_id, at);
SELECT results_eq($$SELECT tip_id, round(credit_gap::numeric, 6) FROM cve.misleading_tips$$,
                  format($$VALUES (%s::bigint, 1.0)$$, :mc),
                  'cve.misleading_tips lists the cve tip with gap 1.0');
SELECT is_empty(format($$SELECT 1 FROM stig.misleading_tips WHERE tip_id = %s$$, :mc),
                'the cve tip never appears in stig.misleading_tips');
SELECT results_eq($$SELECT * FROM stig.misleading_tips$$,
                  $$SELECT tip_id, rule_id, body, attempts, outcome_hit_rate, hit_rate, follow_rate, credit_gap, retired
                      FROM ctxgraph.misleading_tips WHERE skill = 'stig'$$,
                  'stig.misleading_tips is ctxgraph.misleading_tips filtered to stig, in the same order');

-- ---------------------------------------------------------------------------------------------
-- Harmful-tip fixtures. A health failure scores -0.2; harm counts scored retrievals whose
-- verdict is "followed" in an attempt whose failure broke the system.
--
--   tip  attempts (run: result, verdict)                              harm  scored  harm_rate  listed?
--   H1   run-1 health followed, run-2 health followed, run-3 pass fol.  2     3       2/3        yes, first
--   H2   run-1 health followed                                          1     1       1.0        yes, second
--   H3   run-1 health, judge ignored                                    0     1       0          no
--   H4   run-1 clean failure followed                                   0     1       0          no
--   H5   run-1 health, cosine 0.9 (no judge), run-2 pass cosine 0.9     1     2       0.5        yes, third
--   H6   run-1 health, no verdicts (pre-DEF-27)                         0     1       0          no: unknown
-- ---------------------------------------------------------------------------------------------
SELECT tests.make_tip('stig', 'V-401', 'H1: set pam_faillock deny=1')            AS h1,
       tests.make_tip('stig', 'V-402', 'H2: chmod 000 /etc/sudoers')            AS h2,
       tests.make_tip('stig', 'V-403', 'H3: remove the root password')          AS h3,
       tests.make_tip('stig', 'V-404', 'H4: set MaxAuthTries 1')                AS h4,
       tests.make_tip('stig', 'V-405', 'H5: disable sshd to close the finding') AS h5,
       tests.make_tip('stig', 'V-406', 'H6: legacy advice')                     AS h6
\gset

CREATE TEMP TABLE made_harm AS
SELECT tests.make_judged_attempt('stig', v.run_id, v.rule_id, 1, ARRAY[v.tip]::bigint[], v.passed, v.mode,
                                 v.at::timestamptz, v.llm, v.emb) AS attempt_id
  FROM (VALUES
        ('run-1', 'V-401', :h1, false, 'health_failure', '2026-11-01 11:00:00+00', true, 0.8::double precision),
        ('run-2', 'V-401', :h1, false, 'health_failure', '2026-11-02 11:00:00+00', true, 0.8),
        ('run-3', 'V-401', :h1, true, NULL, '2026-11-03 11:00:00+00', true, 0.8),
        ('run-1', 'V-402', :h2, false, 'health_failure', '2026-11-01 11:00:00+00', true, 0.8),
        ('run-1', 'V-403', :h3, false, 'health_failure', '2026-11-01 11:00:00+00', false, 0.1),
        ('run-1', 'V-404', :h4, false, 'clean_failure', '2026-11-01 11:00:00+00', true, 0.8),
        ('run-1', 'V-405', :h5, false, 'health_failure', '2026-11-01 11:00:00+00', NULL, 0.9),
        ('run-2', 'V-405', :h5, true, NULL, '2026-11-02 11:00:00+00', NULL, 0.9),
        ('run-1', 'V-406', :h6, false, 'health_failure', '2026-11-01 11:00:00+00', NULL, NULL)
       ) AS v (run_id, rule_id, tip, passed, mode, at, llm, emb);

-- ---------------------------------------------------------------------------------------------
-- harmful_tips (6)
-- ---------------------------------------------------------------------------------------------
-- H1: outcome (-0.2 - 0.2 + 1.0) / 3 = 0.2, all followed so hit_rate 0.2 too.
-- H5: outcome (-0.2 + 1.0) / 2 = 0.4, followed by cosine both times.
SELECT results_eq(
    $$SELECT tip_id, harm, attempts, round(harm_rate::numeric, 6), round(outcome_hit_rate::numeric, 6),
             round(hit_rate::numeric, 6), round(follow_rate::numeric, 6), retired
        FROM stig.harmful_tips$$,
    format($$VALUES (%s::bigint, 2::bigint, 3::bigint, 0.666667, 0.2, 0.2, 1.0, false),
                    (%s, 1, 1, 1.0, -0.2, -0.2, 1.0, false),
                    (%s, 1, 2, 0.5, 0.4, 0.4, 1.0, false)$$, :h1, :h2, :h5),
    'harmful_tips lists H1 (harm 2), H2 (harm 1, rate 1.0), H5 (harm 1, rate 0.5), most harm first then highest rate');
SELECT is_empty(format($$SELECT 1 FROM stig.harmful_tips WHERE tip_id IN (%s, %s, %s)$$, :h3, :h4, :h6),
                'not harmful: H3 (ignored in the health failure), H4 (followed in a clean failure), H6 (no verdict)');
SELECT is_empty($$SELECT 1 FROM stig.harmful_tips WHERE tip_id IN (SELECT id FROM stig.tips WHERE rule_id LIKE 'V-30_')$$,
                'no misleading-tip fixture is harmful: none was in a health failure');
SELECT is_empty($$SELECT 1 FROM stig.misleading_tips WHERE tip_id IN (SELECT id FROM stig.tips WHERE rule_id LIKE 'V-40_')$$,
                'no harmful-tip fixture is misleading');

-- A failure mode corrected after the fact moves the tip out of the report.
UPDATE stig.attempts SET failure_mode = 'clean_failure'
 WHERE id IN (SELECT attempt_id FROM stig.tip_retrievals WHERE tip_id = :h2);
SELECT is_empty(format($$SELECT 1 FROM stig.harmful_tips WHERE tip_id = %s$$, :h2),
                'H2''s attempt corrected to a clean failure: H2 leaves harmful_tips');
SELECT results_eq($$SELECT * FROM stig.harmful_tips$$,
                  $$SELECT tip_id, rule_id, body, harm, attempts, harm_rate, outcome_hit_rate, hit_rate, follow_rate, retired
                      FROM ctxgraph.harmful_tips WHERE skill = 'stig'$$,
                  'stig.harmful_tips is ctxgraph.harmful_tips filtered to stig, in the same order');

SELECT * FROM finish();
ROLLBACK;
