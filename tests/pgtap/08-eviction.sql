-- Eviction: the ADR-0019 witness (run 7's cryptography collapse) and the rules in the header of
-- deploy/function_tip_evidence.sql: evidence counted by attempts, a tip retired on its own blame
-- (ctxgraph.tip_effects.misleading_probability, co-followed tips and the rule's difficulty
-- explained away by the attribution fit), with minimum support, harm with less support, dry run
-- first, reversible, and only evidence up to as_of. The baseline and Wilson columns stay as
-- evidence and are checked by hand.
--
-- The fit runs in Python (ctxgraph.fit; its numbers are tests/test_fit.py's), so here
-- tests.write_fit stores, at each instant a scenario needs, the blame that fit gives this world:
-- what SQL owns is deciding on the stored fit. evict_tips never refits: a retiring run refuses
-- (55000, nothing retired) no fit, a fit that read evidence after its as_of, or one whose tips'
-- evidence changed since it past eviction.max_unfitted_tips; a dry run on a stale fit still answers.
--
-- Instants: runs 4..7 happen on 2026-11-04 .. 2026-11-07; "before run 7" is 2026-11-06 23:59:59,
-- "after run 7" is 2026-11-08 00:00:00. evict_tips always gets its as_of explicitly; the
-- eviction_candidates view and restore_tip use now(), which is after every fixture instant.
-- Floating values are compared after round(..., 6).
BEGIN;
SELECT plan(81);

-- ---------------------------------------------------------------------------------------------
-- Fixtures. Follow verdicts: "ignored" = judge false (cosine 0.2), "followed" = judge true
-- (cosine 0.8), "no verdict" = both columns NULL (pre-DEF-27). Graded stig outcomes: pass on
-- attempt 1 = 1.0, on attempt 2 = 0.8, clean failure 0.0, health failure -0.2.
--
--  rule (tips)                                        run-4       run-5        run-6        run-7
--  harden_sshd_macs_openssh_conf_crypto_policy        #1 pass     #1 pass      #1 pass      #1, #2, #3 clean fail
--    (W1..W5: the witness)                            ignored     ignored      ignored      followed
--  harden_sshd_kex_openssh_conf_crypto_policy         same shape as the witness, no verdicts at all
--    (P1..P5: pre-DEF-27)
--  harden_sshd_ciphers_openssh_conf_crypto_policy     -           -            #1 pass X    #1 clean fail X
--    (X: two rows alone)                                                       ignored      followed
--  enable_fips_mode (U followed, V ignored)           -           #1 fail U    #1 fail U    #1 fail U
--    (the rule fails for everyone)                                #2 fail V    #2 fail V    #2 fail V
--  set_pam_faillock_deny (H, G)                       #1 pass G   #1 health H  #1 pass H+G  #1 health H
--    (H: harm, 3 attempts)                            ignored     followed     ignored      followed
--                                                                 #2 pass G                 #2 pass G, ignored
--  set_pam_pwquality_minlen (Ha, F)                   -           -            #1 health Ha #1 health Ha
--    (Ha: harm, exactly 2 attempts)                                            #2 pass F    #2 pass F, ignored
-- ---------------------------------------------------------------------------------------------
SELECT tests.make_tip('stig', 'harden_sshd_macs_openssh_conf_crypto_policy', 'W1: use update-crypto-policies, do not edit ssh_config by hand', '2026-10-01 00:00:00+00') AS w1,
       tests.make_tip('stig', 'harden_sshd_macs_openssh_conf_crypto_policy', 'W2: set the MACs through a crypto-policies subpolicy', '2026-10-01 00:00:00+00') AS w2,
       tests.make_tip('stig', 'harden_sshd_macs_openssh_conf_crypto_policy', 'W3: never overwrite /etc/ssh/ssh_config', '2026-10-01 00:00:00+00') AS w3,
       tests.make_tip('stig', 'harden_sshd_macs_openssh_conf_crypto_policy', 'W4: keep the Include directive in ssh_config', '2026-10-01 00:00:00+00') AS w4,
       tests.make_tip('stig', 'harden_sshd_macs_openssh_conf_crypto_policy', 'W5: run update-crypto-policies --set FIPS:OSPP', '2026-10-01 00:00:00+00') AS w5,
       tests.make_tip('stig', 'harden_sshd_kex_openssh_conf_crypto_policy', 'P1: legacy kex advice', '2026-10-01 00:00:00+00') AS p1,
       tests.make_tip('stig', 'harden_sshd_kex_openssh_conf_crypto_policy', 'P2: legacy kex advice', '2026-10-01 00:00:00+00') AS p2,
       tests.make_tip('stig', 'harden_sshd_kex_openssh_conf_crypto_policy', 'P3: legacy kex advice', '2026-10-01 00:00:00+00') AS p3,
       tests.make_tip('stig', 'harden_sshd_kex_openssh_conf_crypto_policy', 'P4: legacy kex advice', '2026-10-01 00:00:00+00') AS p4,
       tests.make_tip('stig', 'harden_sshd_kex_openssh_conf_crypto_policy', 'P5: legacy kex advice', '2026-10-01 00:00:00+00') AS p5,
       tests.make_tip('stig', 'harden_sshd_ciphers_openssh_conf_crypto_policy', 'X: edit the ciphers line', '2026-10-01 00:00:00+00') AS x,
       tests.make_tip('stig', 'enable_fips_mode', 'U: run fips-mode-setup --enable', '2026-10-01 00:00:00+00') AS u,
       tests.make_tip('stig', 'enable_fips_mode', 'V: add fips=1 to the kernel command line', '2026-10-01 00:00:00+00') AS v,
       tests.make_tip('stig', 'set_pam_faillock_deny', 'H: set deny=1 in faillock.conf and restart sshd', '2026-10-01 00:00:00+00') AS h,
       tests.make_tip('stig', 'set_pam_faillock_deny', 'G: set deny=3 with authselect', '2026-10-01 00:00:00+00') AS g,
       tests.make_tip('stig', 'set_pam_pwquality_minlen', 'Ha: edit system-auth by hand', '2026-10-01 00:00:00+00') AS ha,
       tests.make_tip('stig', 'set_pam_pwquality_minlen', 'F: set minlen in pwquality.conf', '2026-10-01 00:00:00+00') AS f
\gset

-- Runs 4..6.
CREATE TEMP TABLE made AS
SELECT tests.make_judged_attempt('stig', a.run_id, a.rule_id, a.n, a.tips, a.passed, a.mode, a.at::timestamptz,
                                 a.llm, CASE WHEN a.llm THEN 0.8 WHEN NOT a.llm THEN 0.2 END) AS attempt_id
  FROM (VALUES
        ('run-4', 'harden_sshd_macs_openssh_conf_crypto_policy', 1, ARRAY[:w1, :w2, :w3, :w4, :w5]::bigint[], true, NULL, '2026-11-04 10:00:00+00', false),
        ('run-5', 'harden_sshd_macs_openssh_conf_crypto_policy', 1, ARRAY[:w1, :w2, :w3, :w4, :w5]::bigint[], true, NULL, '2026-11-05 10:00:00+00', false),
        ('run-6', 'harden_sshd_macs_openssh_conf_crypto_policy', 1, ARRAY[:w1, :w2, :w3, :w4, :w5]::bigint[], true, NULL, '2026-11-06 10:00:00+00', false),
        ('run-4', 'harden_sshd_kex_openssh_conf_crypto_policy', 1, ARRAY[:p1, :p2, :p3, :p4, :p5]::bigint[], true, NULL, '2026-11-04 11:00:00+00', NULL),
        ('run-5', 'harden_sshd_kex_openssh_conf_crypto_policy', 1, ARRAY[:p1, :p2, :p3, :p4, :p5]::bigint[], true, NULL, '2026-11-05 11:00:00+00', NULL),
        ('run-6', 'harden_sshd_kex_openssh_conf_crypto_policy', 1, ARRAY[:p1, :p2, :p3, :p4, :p5]::bigint[], true, NULL, '2026-11-06 11:00:00+00', NULL),
        ('run-6', 'harden_sshd_ciphers_openssh_conf_crypto_policy', 1, ARRAY[:x]::bigint[], true, NULL, '2026-11-06 12:00:00+00', false),
        ('run-5', 'enable_fips_mode', 1, ARRAY[:u]::bigint[], false, 'clean_failure', '2026-11-05 13:00:00+00', true),
        ('run-5', 'enable_fips_mode', 2, ARRAY[:v]::bigint[], false, 'clean_failure', '2026-11-05 13:20:00+00', false),
        ('run-6', 'enable_fips_mode', 1, ARRAY[:u]::bigint[], false, 'clean_failure', '2026-11-06 13:00:00+00', true),
        ('run-6', 'enable_fips_mode', 2, ARRAY[:v]::bigint[], false, 'clean_failure', '2026-11-06 13:20:00+00', false),
        ('run-4', 'set_pam_faillock_deny', 1, ARRAY[:g]::bigint[], true, NULL, '2026-11-04 14:00:00+00', false),
        ('run-5', 'set_pam_faillock_deny', 1, ARRAY[:h]::bigint[], false, 'health_failure', '2026-11-05 14:00:00+00', true),
        ('run-5', 'set_pam_faillock_deny', 2, ARRAY[:g]::bigint[], true, NULL, '2026-11-05 14:20:00+00', false),
        ('run-6', 'set_pam_faillock_deny', 1, ARRAY[:h, :g]::bigint[], true, NULL, '2026-11-06 14:00:00+00', false),
        ('run-6', 'set_pam_pwquality_minlen', 1, ARRAY[:ha]::bigint[], false, 'health_failure', '2026-11-06 15:00:00+00', true),
        ('run-6', 'set_pam_pwquality_minlen', 2, ARRAY[:f]::bigint[], true, NULL, '2026-11-06 15:20:00+00', false)
       ) AS a (run_id, rule_id, n, tips, passed, mode, at, llm);

-- The attribution fit after run 7, as ctxgraph.fit gives it: the five witness tips, always
-- retrieved and followed together, share one column (co_followed_tips 5, as do P1..P5) and a
-- misleading probability of 0.75; H and Ha 1.00; no other tip above 0.39 (X). Ha's effect stays
-- uncertain (-1.09, std error 1.18: its upper bound is above 0). tests.write_fit stores one blame
-- for every blamed tip and each tip in a column of its own; the rest is set here as the fit has it.
CREATE FUNCTION pg_temp.write_fit_after_run_7(as_of timestamptz, witness bigint[], pre_def27 bigint[], h bigint, ha bigint)
RETURNS void
LANGUAGE sql
AS $$
    SELECT tests.write_fit('stig', as_of, witness || ARRAY[h, ha], blamed_probability => 0.75, cleared => 0.39);
    UPDATE ctxgraph.tip_effects SET co_followed_tips = 5, component_tips = 5
     WHERE skill = 'stig' AND tip_id = ANY (witness || pre_def27);
    UPDATE ctxgraph.tip_effects SET misleading_probability = 1.0 WHERE skill = 'stig' AND tip_id IN (h, ha);
    UPDATE ctxgraph.tip_effects SET effect = -1.09, std_error = 1.18, lower_bound = -1.09 - 1.645 * 1.18,
                                    upper_bound = -1.09 + 1.645 * 1.18
     WHERE skill = 'stig' AND tip_id = ha;
$$;

-- ---------------------------------------------------------------------------------------------
-- Before run 7 (8): outcome-only credit calls the witness tips helpful, follow-weighted credit
-- and the misleading-tip detector expose them, and eviction retires nothing: not without a fit,
-- and not on the fit, which blames H and Ha (0.99: each followed in one health failure) but finds
-- them too little supported yet and clears the witness tips (0.30 at most: ignored, and passing).
-- ---------------------------------------------------------------------------------------------
SELECT results_eq(
    format($$SELECT tip_id, attempts, outcome_hit_rate, hit_rate, follow_rate FROM stig.tip_hit_rates
              WHERE tip_id IN (%s, %s, %s, %s, %s) ORDER BY tip_id$$, :w1, :w2, :w3, :w4, :w5),
    format($$VALUES (%s::bigint, 3::bigint, 1.0::double precision, 0.0::double precision, 0.0::double precision),
                    (%s, 3, 1.0, 0.0, 0.0), (%s, 3, 1.0, 0.0, 0.0), (%s, 3, 1.0, 0.0, 0.0), (%s, 3, 1.0, 0.0, 0.0)$$,
           :w1, :w2, :w3, :w4, :w5),
    'before run 7: each witness tip has 3 passing attempts: outcome_hit_rate 1 but hit_rate 0 (ignored every time)');
SELECT set_eq($$SELECT tip_id FROM stig.misleading_tips WHERE rule_id = 'harden_sshd_macs_openssh_conf_crypto_policy'$$,
              ARRAY[:w1, :w2, :w3, :w4, :w5]::bigint[],
              'before run 7: misleading_tips flags all five witness tips');
SELECT throws_ok($$SELECT * FROM ctxgraph.evict_tips('stig', as_of => '2026-11-06 23:59:59+00', dry_run => false)$$,
                 '55000', NULL, 'before any fit: a retiring evict_tips raises 55000 (it never fits)');
SELECT is((SELECT count(*) FROM stig.tips WHERE retired_at IS NOT NULL) + (SELECT count(*) FROM ctxgraph.tip_evictions),
          0::bigint, 'before any fit: the refused run retired and logged nothing');
SELECT tests.write_fit('stig', '2026-11-06 23:59:59+00', ARRAY[:h, :ha]::bigint[], blamed_probability => 0.99,
                       cleared => 0.30) AS fitted_tips \gset
SELECT is_empty($$SELECT 1 FROM stig.eviction_candidates$$,
                'before run 7: eviction_candidates is empty (ignored tips are never blamed for passes)');
SELECT is_empty($$SELECT * FROM ctxgraph.evict_tips('stig', as_of => '2026-11-06 23:59:59+00', dry_run => false)$$,
                'before run 7: evict_tips (for real) retires nothing');
SELECT is((SELECT count(*) FROM stig.tips WHERE retired_at IS NOT NULL), 0::bigint,
          'before run 7: no tip is retired');
SELECT is((SELECT count(*) FROM ctxgraph.tip_evictions), 0::bigint,
          'before run 7: the eviction log is empty');

-- Run 7: the more obedient Worker follows the witness tips and fails three times in a row.
INSERT INTO made
SELECT tests.make_judged_attempt('stig', 'run-7', a.rule_id, a.n, a.tips, a.passed, a.mode, a.at::timestamptz,
                                 a.llm, CASE WHEN a.llm THEN 0.8 WHEN NOT a.llm THEN 0.2 END)
  FROM (VALUES
        ('harden_sshd_macs_openssh_conf_crypto_policy', 1, ARRAY[:w1, :w2, :w3, :w4, :w5]::bigint[], false, 'clean_failure', '2026-11-07 10:00:00+00', true),
        ('harden_sshd_macs_openssh_conf_crypto_policy', 2, ARRAY[:w1, :w2, :w3, :w4, :w5]::bigint[], false, 'clean_failure', '2026-11-07 10:20:00+00', true),
        ('harden_sshd_macs_openssh_conf_crypto_policy', 3, ARRAY[:w1, :w2, :w3, :w4, :w5]::bigint[], false, 'clean_failure', '2026-11-07 10:40:00+00', true),
        ('harden_sshd_kex_openssh_conf_crypto_policy', 1, ARRAY[:p1, :p2, :p3, :p4, :p5]::bigint[], false, 'clean_failure', '2026-11-07 11:00:00+00', NULL),
        ('harden_sshd_kex_openssh_conf_crypto_policy', 2, ARRAY[:p1, :p2, :p3, :p4, :p5]::bigint[], false, 'clean_failure', '2026-11-07 11:20:00+00', NULL),
        ('harden_sshd_kex_openssh_conf_crypto_policy', 3, ARRAY[:p1, :p2, :p3, :p4, :p5]::bigint[], false, 'clean_failure', '2026-11-07 11:40:00+00', NULL),
        ('harden_sshd_ciphers_openssh_conf_crypto_policy', 1, ARRAY[:x]::bigint[], false, 'clean_failure', '2026-11-07 12:00:00+00', true),
        ('enable_fips_mode', 1, ARRAY[:u]::bigint[], false, 'clean_failure', '2026-11-07 13:00:00+00', true),
        ('enable_fips_mode', 2, ARRAY[:v]::bigint[], false, 'clean_failure', '2026-11-07 13:20:00+00', false),
        ('set_pam_faillock_deny', 1, ARRAY[:h]::bigint[], false, 'health_failure', '2026-11-07 14:00:00+00', true),
        ('set_pam_faillock_deny', 2, ARRAY[:g]::bigint[], true, NULL, '2026-11-07 14:20:00+00', false),
        ('set_pam_pwquality_minlen', 1, ARRAY[:ha]::bigint[], false, 'health_failure', '2026-11-07 15:00:00+00', true),
        ('set_pam_pwquality_minlen', 2, ARRAY[:f]::bigint[], true, NULL, '2026-11-07 15:20:00+00', false)
       ) AS a (rule_id, n, tips, passed, mode, at, llm);

-- ---------------------------------------------------------------------------------------------
-- as_of (2): evidence after as_of is ignored. Run 7 changed the evidence the fit above read, so
-- the fit of the evidence up to before run 7 is written again (the same blame).
-- ---------------------------------------------------------------------------------------------
SELECT tests.write_fit('stig', '2026-11-06 23:59:59+00', ARRAY[:h, :ha]::bigint[], blamed_probability => 0.99,
                       cleared => 0.30) AS fitted_tips \gset
SELECT is_empty($$SELECT * FROM ctxgraph.evict_tips('stig', as_of => '2026-11-06 23:59:59+00', dry_run => false)$$,
                'evict_tips as of before run 7 retires nothing although run 7 is in the log');
SELECT results_eq(
    format($$SELECT attempts, runs, followed_attempts, reason FROM ctxgraph.tip_evidence('stig', '2026-11-06 23:59:59+00') WHERE tip_id = %s$$, :w1),
    $$VALUES (3::bigint, 3::bigint, 0.0::double precision, NULL::text)$$,
    'tip_evidence as of before run 7: W1 has 3 attempts in 3 runs, none followed, no reason');

-- ---------------------------------------------------------------------------------------------
-- The evidence after run 7 (8), by hand. W1: 6 attempts in 4 runs; followed in the 3 run-7
-- attempts (weight 1 each), all 0.0 -> followed outcome 0, Wilson upper bound at z = 1, n = 3:
-- 1 / (3 + 1) = 0.25. Rule baseline: the rule's attempts without W1 followed = the 3 passes
-- (1.0) -> 1.0. Shortfall lower bound 1.0 - 0.25 = 0.75. The five witness tips were always
-- retrieved and followed together: one column of the effects fit, one shared, clearly harmful
-- effect (the scoring pass refits; here the fit it writes is stored, as of after run 7).
-- ---------------------------------------------------------------------------------------------
SELECT pg_temp.write_fit_after_run_7('2026-11-08 00:00:00+00', ARRAY[:w1, :w2, :w3, :w4, :w5]::bigint[],
                                     ARRAY[:p1, :p2, :p3, :p4, :p5]::bigint[], :h, :ha);
SELECT results_eq(
    format($$SELECT attempts, runs, round(followed_attempts::numeric, 6), round(followed_outcome::numeric, 6),
                    round(outcome_upper_bound::numeric, 6), round(baseline_attempts::numeric, 6),
                    round(rule_baseline::numeric, 6), round(shortfall_lower_bound::numeric, 6), retired
               FROM ctxgraph.tip_evidence('stig', '2026-11-08 00:00:00+00') WHERE tip_id = %s$$, :w1),
    $$VALUES (6::bigint, 4::bigint, 3.0, 0.0, 0.25, 3.0, 1.0, 0.75, false)$$,
    'W1 after run 7: 6 attempts, 4 runs, followed 3 with outcome 0 (upper bound 0.25), baseline 1.0, shortfall 0.75');
SELECT ok((SELECT bool_and(reason LIKE 'harmful when followed: %, always followed together with 4 other tips')
             FROM ctxgraph.tip_evidence('stig', '2026-11-08 00:00:00+00')
            WHERE tip_id IN (:w1, :w2, :w3, :w4, :w5)),
          'all five witness tips, always followed together, are harmful when followed (one shared effect)');
-- X: one ignored pass and one followed failure. Followed outcome 0 over 1 attempt: upper bound
-- 1/2, baseline 1.0, shortfall 0.5: the same story, but 2 attempts (< 3) and 1 followed (< 3).
SELECT results_eq(
    format($$SELECT attempts, runs, round(followed_attempts::numeric, 6), round(outcome_upper_bound::numeric, 6),
                    round(rule_baseline::numeric, 6), round(shortfall_lower_bound::numeric, 6), reason
               FROM ctxgraph.tip_evidence('stig', '2026-11-08 00:00:00+00') WHERE tip_id = %s$$, :x),
    $$VALUES (2::bigint, 2::bigint, 1.0, 0.5, 1.0, 0.5, NULL::text)$$,
    'X (one ignored pass, one followed failure): shortfall 0.5 but two rows alone never retire a tip');
-- U: followed in 3 failures over 3 runs, exactly like the witness on its followed side (upper
-- bound 0.25), but its rule fails for everyone: baseline (V's 3 failures) 0.0, shortfall -0.25.
SELECT results_eq(
    format($$SELECT attempts, runs, round(followed_attempts::numeric, 6), round(followed_outcome::numeric, 6),
                    round(outcome_upper_bound::numeric, 6), round(rule_baseline::numeric, 6),
                    round(shortfall_lower_bound::numeric, 6), reason
               FROM ctxgraph.tip_evidence('stig', '2026-11-08 00:00:00+00') WHERE tip_id = %s$$, :u),
    $$VALUES (3::bigint, 3::bigint, 3.0, 0.0, 0.25, 0.0, -0.25, NULL::text)$$,
    'U (three followed failures on a rule that fails for everyone): baseline 0, never retired for its rule''s difficulty');
-- P1: the witness shape with no verdicts: every row weighs 0.5, so followed outcome
-- (0.5*3*1.0 + 0.5*3*0.0) / 3 = 0.5, upper bound 0.75; the baseline is the same rows at weight
-- 1 - 0.5: 0.5. Shortfall -0.25.
SELECT results_eq(
    format($$SELECT attempts, round(followed_attempts::numeric, 6), round(followed_outcome::numeric, 6),
                    round(outcome_upper_bound::numeric, 6), round(rule_baseline::numeric, 6), reason
               FROM ctxgraph.tip_evidence('stig', '2026-11-08 00:00:00+00') WHERE tip_id = %s$$, :p1),
    $$VALUES (6::bigint, 3.0, 0.5, 0.75, 0.5, NULL::text)$$,
    'P1 (pre-DEF-27, no verdicts): followed outcome 0.5 = baseline 0.5, no reason');
-- H: followed in 2 health failures (run-5, run-7) of 3 attempts in 3 runs; the rule's other
-- attempts (G's, and run-6 where H was ignored) all pass: harm share 2/2 = 1 vs 0.
SELECT results_eq(
    format($$SELECT attempts, runs, round(followed_attempts::numeric, 6), round(harm_attempts::numeric, 6),
                    round(harm_share::numeric, 6), round(baseline_harm_share::numeric, 6)
               FROM ctxgraph.tip_evidence('stig', '2026-11-08 00:00:00+00') WHERE tip_id = %s$$, :h),
    $$VALUES (3::bigint, 3::bigint, 2.0, 2.0, 1.0, 0.0)$$,
    'H: 3 attempts, 3 runs, followed in 2 health failures: harm share 1.0 vs 0.0 for its rule');
SELECT matches((SELECT reason FROM ctxgraph.tip_evidence('stig', '2026-11-08 00:00:00+00') WHERE tip_id = :h),
               '^harm: ',
               'H has a harm reason');
-- Ha: the harm support at its minimum: followed in exactly 2 health failures across 2 runs, on a
-- rule whose other attempts (F's) pass. Two attempts leave its effect uncertain (the upper bound
-- is above 0), but not its blame: a failure without a misleading tip breaks the system once in a
-- thousand (blame.unexplained_harm), so two that broke it with Ha alone followed point at Ha.
SELECT ok((SELECT reason LIKE 'harm: misleading probability %' AND effect < 0 AND effect_upper_bound >= 0
             FROM ctxgraph.tip_evidence('stig', '2026-11-08 00:00:00+00') WHERE tip_id = :ha),
          'Ha (followed in exactly 2 health failures across 2 runs): its effect is uncertain, its blame is not: a harm reason');

-- ---------------------------------------------------------------------------------------------
-- eviction_candidates after run 7 (3). Ha is left out here: its own assertion is above.
-- ---------------------------------------------------------------------------------------------
SELECT set_eq(
    format($$SELECT tip_id, split_part(reason, ':', 1) FROM stig.eviction_candidates WHERE tip_id <> %s$$, :ha),
    format($$VALUES (%s::bigint, 'harmful when followed'), (%s, 'harmful when followed'),
                    (%s, 'harmful when followed'), (%s, 'harmful when followed'),
                    (%s, 'harmful when followed'), (%s, 'harm')$$, :w1, :w2, :w3, :w4, :w5, :h),
    'after run 7: eviction_candidates lists the five witness tips (harmful when followed) and H (harm), nothing else');
SELECT is_empty(
    format($$SELECT 1 FROM stig.eviction_candidates WHERE tip_id IN (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)$$,
           :x, :u, :v, :g, :f, :p1, :p2, :p3, :p4, :p5),
    'not candidates: X (two rows), U (rule fails for everyone), V, G, F (never followed), P1..P5 (pre-DEF-27)');
SELECT results_eq(
    format($$SELECT rule_id, body, attempts, runs FROM stig.eviction_candidates WHERE tip_id = %s$$, :w1),
    $$VALUES ('harden_sshd_macs_openssh_conf_crypto_policy', 'W1: use update-crypto-policies, do not edit ssh_config by hand', 6::bigint, 4::bigint)$$,
    'eviction_candidates shows the tip''s rule, text and support');

-- ---------------------------------------------------------------------------------------------
-- Dry run (default) changes nothing (4).
-- ---------------------------------------------------------------------------------------------
SELECT results_eq(
    format($$SELECT tip_id, split_part(reason, ':', 1), round(followed_attempts::numeric, 6), round(followed_outcome::numeric, 6),
                    round(rule_baseline::numeric, 6), retired
               FROM ctxgraph.evict_tips('stig', as_of => '2026-11-08 00:00:00+00') WHERE tip_id <> %s ORDER BY tip_id$$, :ha),
    format($$VALUES (%s::bigint, 'harmful when followed', 3.0, 0.0, 1.0, false),
                    (%s, 'harmful when followed', 3.0, 0.0, 1.0, false),
                    (%s, 'harmful when followed', 3.0, 0.0, 1.0, false),
                    (%s, 'harmful when followed', 3.0, 0.0, 1.0, false),
                    (%s, 'harmful when followed', 3.0, 0.0, 1.0, false),
                    (%s, 'harm', 2.0, -0.2, 0.9, false)$$, :w1, :w2, :w3, :w4, :w5, :h),
    'evict_tips dry run (default) returns what it would retire, retired = false (H''s baseline: G''s passes 1.0, 0.8, 0.8 and run-6''s 1.0 -> 0.9)');
SELECT is((SELECT count(*) FROM stig.tips WHERE retired_at IS NOT NULL), 0::bigint,
          'after the dry run: no tip is retired');
SELECT is((SELECT count(*) FROM ctxgraph.tip_evictions), 0::bigint,
          'after the dry run: the eviction log is still empty');
SELECT is((SELECT count(*) FROM stig.tip_hit_rates WHERE retired), 0::bigint,
          'after the dry run: tip_hit_rates shows no retired tip');

-- ---------------------------------------------------------------------------------------------
-- A fit that is not the fit of the evidence asked about (5). First, one that read run 7 cannot
-- retire as of before it. Then one more scored attempt (V, ignored, failing again) changes one
-- tip's evidence after the fit: a dry run still answers on the stored fit (with a WARNING, silenced
-- here), a retiring run refuses it until eviction.max_unfitted_tips accepts one unfitted tip.
-- ---------------------------------------------------------------------------------------------
SELECT throws_ok($$SELECT * FROM ctxgraph.evict_tips('stig', as_of => '2026-11-06 23:59:59+00', dry_run => false)$$,
                 '55000', NULL, 'a retiring evict_tips as of before the fit''s as_of (a fit that read run 7) raises 55000');
INSERT INTO made
SELECT tests.make_judged_attempt('stig', 'run-7', 'enable_fips_mode', 3, ARRAY[:v]::bigint[], false, 'clean_failure',
                                 '2026-11-07 13:40:00+00', false, 0.2);
SELECT results_eq($$SELECT current, tips_changed FROM ctxgraph.fit_state('stig', '2026-11-08 00:00:00+00')$$,
                  $$VALUES (false, 1::bigint)$$,
                  'after V''s new attempt: fit_state calls the fit stale, one tip''s evidence changed since');
SET LOCAL client_min_messages = error;
SELECT set_eq($$SELECT tip_id FROM ctxgraph.evict_tips('stig', as_of => '2026-11-08 00:00:00+00')$$,
              ARRAY[:w1, :w2, :w3, :w4, :w5, :h, :ha]::bigint[],
              'a dry run on the stale fit still proposes the witness tips, H and Ha');
RESET client_min_messages;
SELECT throws_ok($$SELECT * FROM ctxgraph.evict_tips('stig', as_of => '2026-11-08 00:00:00+00', dry_run => false)$$,
                 '55000', NULL, 'a retiring evict_tips on the stale fit raises 55000 (eviction.max_unfitted_tips 0)');
SELECT is((SELECT count(*) FROM stig.tips WHERE retired_at IS NOT NULL) + (SELECT count(*) FROM ctxgraph.tip_evictions),
          0::bigint, 'the refused run retired and logged nothing');

-- ---------------------------------------------------------------------------------------------
-- The real run (9), on that stale fit: eviction.max_unfitted_tips 1 accepts V's unfitted evidence.
-- ---------------------------------------------------------------------------------------------
UPDATE ctxgraph.parameters SET value = 1 WHERE name = 'eviction.max_unfitted_tips';
CREATE TEMP TABLE evicted AS
SELECT * FROM ctxgraph.evict_tips('stig', as_of => '2026-11-08 00:00:00+00', dry_run => false);

SELECT set_eq(format($$SELECT tip_id, retired FROM evicted WHERE tip_id <> %s$$, :ha),
              format($$VALUES (%s::bigint, true), (%s, true), (%s, true), (%s, true), (%s, true), (%s, true)$$,
                     :w1, :w2, :w3, :w4, :w5, :h),
              'evict_tips(dry_run => false) retires the five witness tips and H, each retired = true');
SELECT set_eq(format($$SELECT id, retired_at FROM stig.tips WHERE retired_at IS NOT NULL AND id <> %s$$, :ha),
              format($$VALUES (%s::bigint, '2026-11-08 00:00:00+00'::timestamptz), (%s, '2026-11-08 00:00:00+00'),
                              (%s, '2026-11-08 00:00:00+00'), (%s, '2026-11-08 00:00:00+00'),
                              (%s, '2026-11-08 00:00:00+00'), (%s, '2026-11-08 00:00:00+00')$$,
                     :w1, :w2, :w3, :w4, :w5, :h),
              'retired_at is the as_of instant, on exactly those tips');
SELECT set_eq(format($$SELECT skill, tip_id, retired_at, split_part(reason, ':', 1), restored_at FROM ctxgraph.tip_evictions WHERE tip_id <> %s$$, :ha),
              format($$VALUES ('stig', %s::bigint, '2026-11-08 00:00:00+00'::timestamptz, 'harmful when followed', NULL::timestamptz),
                              ('stig', %s, '2026-11-08 00:00:00+00', 'harmful when followed', NULL),
                              ('stig', %s, '2026-11-08 00:00:00+00', 'harmful when followed', NULL),
                              ('stig', %s, '2026-11-08 00:00:00+00', 'harmful when followed', NULL),
                              ('stig', %s, '2026-11-08 00:00:00+00', 'harmful when followed', NULL),
                              ('stig', %s, '2026-11-08 00:00:00+00', 'harm', NULL)$$,
                     :w1, :w2, :w3, :w4, :w5, :h),
              'tip_evictions has one row per retired tip with its reason');
SELECT results_eq(
    format($$SELECT (evidence ->> 'attempts')::int, (evidence ->> 'rule_baseline')::double precision,
                    (evidence ->> 'outcome_upper_bound')::numeric(10, 6)
               FROM ctxgraph.tip_evictions WHERE tip_id = %s$$, :w1),
    $$VALUES (6, 1.0::double precision, 0.25::numeric(10, 6))$$,
    'the eviction log keeps the evidence (W1: 6 attempts, baseline 1.0, upper bound 0.25)');
SELECT set_eq(format($$SELECT tip_id FROM stig.tip_hit_rates WHERE retired AND tip_id <> %s$$, :ha),
              ARRAY[:w1, :w2, :w3, :w4, :w5, :h]::bigint[],
              'tip_hit_rates.retired is true for exactly the retired tips');
SELECT is_empty(format($$SELECT 1 FROM stig.eviction_candidates WHERE tip_id <> %s$$, :ha),
                'after retiring: eviction_candidates no longer lists them');
SELECT is_empty(format($$SELECT * FROM ctxgraph.evict_tips('stig', as_of => '2026-11-08 00:00:00+00', dry_run => false) WHERE tip_id <> %s$$, :ha),
                'a second evict_tips run retires nothing more');
SELECT is((SELECT count(*) FROM ctxgraph.tip_evictions WHERE tip_id <> :ha), 6::bigint,
          'a second run adds no eviction log rows');
SELECT is((SELECT count(*) FROM stig.tips), 17::bigint,
          'retiring never deletes: all 17 tips are still there');

-- The next scoring pass refits: V's new attempt moves no tip's blame across the threshold.
SELECT pg_temp.write_fit_after_run_7('2026-11-08 00:00:00+00', ARRAY[:w1, :w2, :w3, :w4, :w5]::bigint[],
                                     ARRAY[:p1, :p2, :p3, :p4, :p5]::bigint[], :h, :ha);

-- ---------------------------------------------------------------------------------------------
-- restore_tip (10)
-- ---------------------------------------------------------------------------------------------
SELECT is(ctxgraph.restore_tip('stig', :w1), true, 'restore_tip of a retired tip returns true');
SELECT is(ctxgraph.restore_tip('stig', :w1), false, 'restore_tip a second time returns false');
SELECT is(ctxgraph.restore_tip('stig', :x), false, 'restore_tip of a tip never retired returns false');
SELECT is((SELECT retired_at FROM stig.tips WHERE id = :w1), NULL::timestamptz, 'restored W1: retired_at cleared');
SELECT ok((SELECT restored_at IS NOT NULL AND restored_at >= retired_at FROM ctxgraph.tip_evictions WHERE tip_id = :w1),
          'restored W1: tip_evictions.restored_at stamped, not before retired_at');
SELECT is((SELECT count(*) FROM ctxgraph.tip_evictions WHERE restored_at IS NOT NULL), 1::bigint,
          'only W1''s eviction row is stamped restored');
SELECT is((SELECT retired FROM stig.tip_hit_rates WHERE tip_id = :w1), false, 'restored W1: tip_hit_rates.retired false');
SELECT is_empty(format($$SELECT 1 FROM stig.eviction_candidates WHERE tip_id = %s$$, :w1),
                'restored W1 is not immediately a candidate again');
SELECT is((SELECT attempts FROM ctxgraph.tip_evidence('stig', now()) WHERE tip_id = :w1), 0::bigint,
          'restored W1 is judged only on evidence newer than its restore: none yet');
SELECT is_empty(format($$SELECT 1 FROM ctxgraph.evict_tips('stig', as_of => now()) WHERE tip_id = %s$$, :w1),
                'evict_tips as of now would not retire W1 again');

-- ---------------------------------------------------------------------------------------------
-- Errors (5)
-- ---------------------------------------------------------------------------------------------
SELECT throws_ok($$SELECT * FROM ctxgraph.evict_tips('nosuch', as_of => '2026-11-08 00:00:00+00')$$,
                 '22023', NULL, 'evict_tips of an unknown skill raises 22023');
SELECT throws_ok($$SELECT * FROM ctxgraph.evict_tips(NULL, as_of => '2026-11-08 00:00:00+00')$$,
                 '22004', NULL, 'evict_tips with a NULL skill raises 22004');
SELECT throws_ok($$SELECT * FROM ctxgraph.evict_tips('stig', as_of => NULL)$$,
                 '22004', NULL, 'evict_tips with a NULL as_of raises 22004');
SELECT throws_ok($$SELECT ctxgraph.restore_tip('stig', -1)$$,
                 'P0002', NULL, 'restore_tip of an unknown tip raises P0002');
SELECT throws_ok(format($$SELECT ctxgraph.restore_tip('nosuch', %s)$$, :w2),
                 '22023', NULL, 'restore_tip of an unknown skill raises 22023');

-- ---------------------------------------------------------------------------------------------
-- Privileges, from the catalog (16)
-- ---------------------------------------------------------------------------------------------
SELECT function_privs_are('ctxgraph', f.name, f.args, r.role_name, r.privs,
                          format('%s has %s on ctxgraph.%s', r.role_name,
                                 CASE WHEN r.privs = '{}' THEN 'no EXECUTE' ELSE 'EXECUTE' END, f.name))
  FROM (VALUES (1, 'evict_tips', ARRAY['text', 'timestamp with time zone', 'boolean']::name[]),
               (2, 'restore_tip', ARRAY['text', 'bigint', 'timestamp with time zone']::name[])) AS f (n, name, args)
 CROSS JOIN (VALUES (1, 'ctxgraph_writer', ARRAY['EXECUTE']::name[]), (2, 'ctxgraph_ranker', '{}'::name[]),
                    (3, 'ctxgraph_analyst', '{}'::name[]), (4, 'ctxgraph_scorer', '{}'::name[])) AS r (n, role_name, privs)
 ORDER BY f.n, r.n;
SELECT table_privs_are('stig', v, 'ctxgraph_ranker', ARRAY['SELECT']::name[], format('ranker may SELECT stig.%s', v))
  FROM unnest(ARRAY['tip_hit_rates', 'eviction_candidates']) AS v;
SELECT table_privs_are('stig', 'tip_hit_rates', 'ctxgraph_scorer', '{}'::name[], 'scorer has no privilege on stig.tip_hit_rates');
SELECT table_privs_are('ctxgraph', 'tip_hit_rates', 'ctxgraph_scorer', '{}'::name[], 'scorer has no privilege on ctxgraph.tip_hit_rates');
SELECT ok((SELECT bool_and(has_table_privilege('ctxgraph_analyst', format('%I.%I', s, v.name), 'SELECT'))
             FROM ctxgraph.skill_views AS v CROSS JOIN unnest(ARRAY['ctxgraph', 'stig', 'cve']) AS s),
          'analyst may SELECT every registered view in ctxgraph, stig and cve');
SELECT is((SELECT count(*) FROM ctxgraph.skill_views
            WHERE name IN ('tip_hit_rates', 'misleading_tips', 'harmful_tips', 'eviction_candidates',
                           'follow_agreement', 'follow_anomalies')),
          6::bigint, 'the six consumer views are registered per skill');
SELECT ok(NOT has_table_privilege('ctxgraph_analyst', 'ctxgraph.tips', 'UPDATE'),
          'analyst cannot UPDATE tips (retire by hand)');
SELECT ok(has_table_privilege('ctxgraph_analyst', 'ctxgraph.tip_evictions', 'SELECT')
          AND NOT has_table_privilege('ctxgraph_analyst', 'ctxgraph.tip_evictions', 'INSERT'),
          'analyst reads the eviction log, cannot write it');

-- ---------------------------------------------------------------------------------------------
-- Privileges, exercised (11)
-- ---------------------------------------------------------------------------------------------
SET LOCAL ROLE ctxgraph_writer;
SELECT lives_ok($$SELECT * FROM ctxgraph.evict_tips('stig', as_of => '2026-11-08 00:00:00+00')$$,
                'writer: evict_tips (dry run) works');
SELECT lives_ok(format($$SELECT ctxgraph.restore_tip('stig', %s)$$, :w2), 'writer: restore_tip works');
RESET ROLE;

SET LOCAL ROLE ctxgraph_ranker;
SELECT lives_ok(format($$SELECT tip_id, hit_rate, utility_lower_bound, retired FROM stig.tip_hit_rates WHERE tip_id IN (%s, %s)$$, :w1, :w2),
                'ranker: SELECT from stig.tip_hit_rates works');
-- tip_evidence runs with the owner's rights, so the ranker's SELECT on the view is enough.
SELECT lives_ok($$SELECT tip_id, reason FROM stig.eviction_candidates$$,
                'ranker: SELECT from stig.eviction_candidates works');
SELECT throws_ok($$SELECT * FROM ctxgraph.evict_tips('stig', as_of => '2026-11-08 00:00:00+00')$$,
                 '42501', NULL, 'ranker: evict_tips is refused (42501)');
SELECT throws_ok(format($$SELECT ctxgraph.restore_tip('stig', %s)$$, :w3),
                 '42501', NULL, 'ranker: restore_tip is refused (42501)');
RESET ROLE;

SET LOCAL ROLE ctxgraph_analyst;
SELECT lives_ok($$SELECT (SELECT count(*) FROM stig.tip_hit_rates) + (SELECT count(*) FROM stig.misleading_tips)
                       + (SELECT count(*) FROM stig.harmful_tips) + (SELECT count(*) FROM stig.eviction_candidates)
                       + (SELECT count(*) FROM stig.follow_agreement) + (SELECT count(*) FROM stig.follow_anomalies)
                       + (SELECT count(*) FROM ctxgraph.tip_evictions)$$,
                'analyst: SELECT from every stig view and the eviction log works');
SELECT lives_ok($$SELECT (SELECT count(*) FROM ctxgraph.tip_hit_rates) + (SELECT count(*) FROM ctxgraph.misleading_tips)
                       + (SELECT count(*) FROM ctxgraph.harmful_tips) + (SELECT count(*) FROM ctxgraph.eviction_candidates)
                       + (SELECT count(*) FROM ctxgraph.follow_agreement) + (SELECT count(*) FROM ctxgraph.follow_anomalies)$$,
                'analyst: SELECT from every ctxgraph view works');
SELECT throws_ok($$SELECT * FROM ctxgraph.evict_tips('stig', as_of => '2026-11-08 00:00:00+00')$$,
                 '42501', NULL, 'analyst: evict_tips is refused (42501)');
RESET ROLE;

SET LOCAL ROLE ctxgraph_scorer;
SELECT throws_ok($$SELECT count(*) FROM stig.tip_hit_rates$$,
                 '42501', NULL, 'scorer: SELECT from stig.tip_hit_rates is refused (42501)');
RESET ROLE;

SELECT is((SELECT retired_at FROM stig.tips WHERE id = :w2), NULL::timestamptz,
          'the writer''s restore_tip took effect');

SELECT * FROM finish();
ROLLBACK;
