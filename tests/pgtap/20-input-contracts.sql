-- Input contracts: what the write path accepts as an id and as a similarity, the NULL and unknown
-- skill arguments of the eviction, ranking and label functions, the instants eviction and the fit's
-- functions (fit_state, fit_evidence, write_tip_fit) accept, and the baseline of a restored tip.
-- Every refusal carries the SQLSTATE docs/operations.md documents (22004 for NULL, 22023 for a bad value)
-- and writes nothing.
BEGIN;
SELECT plan(56);

SELECT ctxgraph.add_skill('ic20', 'graded') AS added \gset
SELECT tests.make_tip('stig', 'ic-rule', 'input contract tip A') AS tip_a,
       tests.make_tip('stig', 'ic-rule', 'input contract tip B') AS tip_b,
       tests.make_tip('ic20', 'V-1', 'A') AS ic_tip \gset
CREATE TEMP TABLE runs_before AS SELECT count(*) AS n FROM ctxgraph.runs;

-- ---------------------------------------------------------------------------------------------
-- Ids: 1 to 200 characters, no whitespace, control or invisible format character (14)
-- ---------------------------------------------------------------------------------------------
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', E'run\t8', 'ic-rule', ARRAY[%s]::bigint[], ARRAY[0.9])$$, :tip_a),
                 '22023', 'ctxgraph: run_id must not contain whitespace, control or invisible characters, got U+0009 at character 4',
                 'log_retrievals: a tab in run_id raises 22023 and shows it');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-8', E'ic-rule\n', ARRAY[%s]::bigint[], ARRAY[0.9])$$, :tip_a),
                 '22023', 'ctxgraph: rule_id must not contain whitespace, control or invisible characters, got U+000A at character 8',
                 'log_retrievals: a trailing newline in rule_id raises 22023');
SELECT throws_ok($$SELECT ctxgraph.save_attempt('stig', U&'run\00A08', 'ic-rule', 1)$$,
                 '22023', NULL, 'save_attempt: a no-break space (U+00A0) in run_id raises 22023');
SELECT throws_ok($$SELECT ctxgraph.save_attempt('stig', 'run-8', U&'ic\2003rule', 1)$$,
                 '22023', NULL, 'save_attempt: an em space (U+2003) in rule_id raises 22023');
SELECT throws_ok($$SELECT ctxgraph.save_attempt('stig', 'run-8', U&'ic-rule\200B', 1)$$,
                 '22023', NULL, 'save_attempt: a zero-width space (U+200B) in rule_id raises 22023');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', U&'\FEFFrun-8', 'ic-rule', ARRAY[%s]::bigint[], ARRAY[0.9])$$, :tip_a),
                 '22023', NULL, 'log_retrievals: a byte-order mark (U+FEFF) in run_id raises 22023');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', U&'run\30008', 'ic-rule', ARRAY[%s]::bigint[], ARRAY[0.9])$$, :tip_a),
                 '22023', NULL, 'log_retrievals: an ideographic space (U+3000) in run_id raises 22023');
SELECT throws_ok($$SELECT ctxgraph.save_attempt('stig', 'run 8', 'ic-rule', 1)$$,
                 '22023', 'ctxgraph: run_id must not contain whitespace, control or invisible characters, got U+0020 at character 4',
                 'save_attempt: a space inside run_id raises 22023');
SELECT throws_ok($$SELECT ctxgraph.save_attempt('stig', repeat('r', 1000000), 'ic-rule', 1)$$,
                 '22023', 'ctxgraph: run_id must be at most 200 characters, got 1000000',
                 'save_attempt: a 1 MB run_id raises 22023 (not 54000 from the index)');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-8', repeat('x', 1000000), ARRAY[%s]::bigint[], ARRAY[0.9])$$, :tip_a),
                 '22023', 'ctxgraph: rule_id must be at most 200 characters, got 1000000',
                 'log_retrievals: a 1 MB rule_id raises 22023');
SELECT throws_ok($$SELECT ctxgraph.save_attempt('stig', 'run-8', repeat('x', 201), 1)$$,
                 '22023', 'ctxgraph: rule_id must be at most 200 characters, got 201', 'save_attempt: a 201-character rule_id raises 22023');
SELECT lives_ok($$SELECT ctxgraph.save_attempt('stig', repeat('r', 200), 'ic-rule', 1)$$,
                'save_attempt: a 200-character run_id is an id');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ic20', '[{"line": 3, "kind": "retrieval", "run_id": "r\t3", "rule_id": "V-1", "attempt_number": 1, "retrieved_at": "2026-05-03 10:00+00", "tip_bodies": ["A"], "scores": [0.5]}]')$$,
                 '22023', 'ctxgraph: run log line 3: run_id must not contain whitespace, control or invisible characters, got U+0009 at character 2',
                 'ingest_run_log: the same rule, the line named');
SELECT is((SELECT count(*) FROM ctxgraph.runs) - (SELECT n FROM runs_before), 1::bigint,
          'the refused ids wrote no run: only the 200-character one exists');

-- ---------------------------------------------------------------------------------------------
-- Similarities: finite cosines within [-1, 1] (6)
-- ---------------------------------------------------------------------------------------------
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-9', 'ic-rule', ARRAY[%s]::bigint[], ARRAY['Infinity']::float8[])$$, :tip_a),
                 '22023', 'ctxgraph: similarity_scores must be cosines between -1 and 1, got Infinity', 'a similarity of +Infinity raises 22023');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-9', 'ic-rule', ARRAY[%s]::bigint[], ARRAY['-Infinity']::float8[])$$, :tip_a),
                 '22023', 'ctxgraph: similarity_scores must be cosines between -1 and 1, got -Infinity', 'a similarity of -Infinity raises 22023');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-9', 'ic-rule', ARRAY[%s, %s]::bigint[], ARRAY[0.5, 42])$$, :tip_a, :tip_b),
                 '22023', 'ctxgraph: similarity_scores must be cosines between -1 and 1, got 42', 'a similarity of 42 raises 22023');
SELECT throws_ok(format($$SELECT ctxgraph.log_retrievals('stig', 'run-9', 'ic-rule', ARRAY[%s]::bigint[], ARRAY[-1.0000001])$$, :tip_a),
                 '22023', NULL, 'a similarity just below -1 raises 22023');
SELECT is((SELECT count(*) FROM ctxgraph.log_retrievals('stig', 'run-9', 'ic-rule', ARRAY[:tip_a, :tip_b]::bigint[], ARRAY[1, -1])),
          2::bigint, 'similarities of exactly 1 and -1 are cosines');
SELECT throws_ok($$SELECT * FROM tests.ingest_log('ic20', '[{"line": 9, "kind": "retrieval", "run_id": "r9", "rule_id": "V-1", "attempt_number": 1, "retrieved_at": "2026-05-03 10:00+00", "tip_bodies": ["A"], "scores": [42]}]')$$,
                 '22023', 'ctxgraph: run log line 9: similarity_scores must be cosines between -1 and 1, got 42',
                 'ingest_run_log: a similarity of 42, the line named');

-- ---------------------------------------------------------------------------------------------
-- NULL and unknown skills: 22004 and 22023, never an empty answer (17)
-- ---------------------------------------------------------------------------------------------
SELECT throws_ok($$SELECT ctxgraph.restore_tip('stig', NULL)$$, '22004', NULL, 'restore_tip with a NULL tip id raises 22004');
SELECT throws_ok(format($$SELECT ctxgraph.restore_tip('stig', %s, NULL)$$, :tip_a), '22004', NULL,
                 'restore_tip with a NULL as_of raises 22004, retired or not');
SELECT throws_ok($$SELECT ctxgraph.drop_skill(NULL)$$, '22004', NULL, 'drop_skill(NULL) raises 22004');
SELECT throws_ok($$SELECT ctxgraph.drop_skill('nosuch')$$, '22023', NULL, 'drop_skill of an unknown skill raises 22023');
SELECT throws_ok($$SELECT * FROM ctxgraph.tip_evidence(NULL)$$, '22004', NULL, 'tip_evidence(NULL) raises 22004');
SELECT throws_ok($$SELECT * FROM ctxgraph.tip_evidence('nosuch')$$, '22023', NULL, 'tip_evidence of an unknown skill raises 22023');
SELECT throws_ok($$SELECT * FROM ctxgraph.tip_evidence('stig', NULL)$$, '22004', NULL, 'tip_evidence with a NULL as_of raises 22004');
SELECT lives_ok($$SELECT * FROM ctxgraph.eviction_candidates$$, 'eviction_candidates still reads every skill''s evidence');
SELECT throws_ok($$SELECT * FROM ctxgraph.rule_ranking(NULL, 'ic-rule')$$, '22004', NULL, 'rule_ranking with a NULL skill raises 22004');
SELECT throws_ok($$SELECT * FROM ctxgraph.rule_ranking('nosuch', 'ic-rule')$$, '22023', NULL, 'rule_ranking of an unknown skill raises 22023');
SELECT throws_ok($$SELECT * FROM ctxgraph.rule_ranking('stig', NULL)$$, '22004', NULL, 'rule_ranking with a NULL rule raises 22004');
SELECT is((SELECT count(*) FROM ctxgraph.rule_ranking('stig', 'ic-rule')), 2::bigint, 'rule_ranking of a known rule lists its tips');
SELECT throws_ok(format($$SELECT * FROM ctxgraph.follow_label_metrics('stig', ARRAY[%s, %s]::bigint[], ARRAY[true])$$, :tip_a, :tip_b),
                 '22023', 'ctxgraph: 2 retrieval ids but 1 gold labels', 'follow_label_metrics with mismatched arrays raises 22023');
SELECT throws_ok($$SELECT * FROM ctxgraph.follow_label_metrics('stig', ARRAY[[1], [2]]::bigint[], ARRAY[[true], [false]])$$,
                 '22023', NULL, 'follow_label_metrics with two-dimensional arrays raises 22023');
SELECT throws_ok($$SELECT * FROM ctxgraph.follow_label_metrics('stig', NULL, ARRAY[true])$$, '22004', NULL,
                 'follow_label_metrics with NULL retrieval ids raises 22004');
SELECT throws_ok($$SELECT * FROM ctxgraph.follow_label_metrics('nosuch', ARRAY[1]::bigint[], ARRAY[true])$$, '22023', NULL,
                 'follow_label_metrics of an unknown skill raises 22023');
SELECT throws_ok($$SELECT * FROM ctxgraph.follow_label_metrics(NULL, ARRAY[1]::bigint[], ARRAY[true])$$, '22004', NULL,
                 'follow_label_metrics with a NULL skill raises 22004');

-- ---------------------------------------------------------------------------------------------
-- An as_of of infinity is no instant: 22023, before anything is recorded or fitted at it; the
-- fit's as_of NULL: 22004 (10)
-- ---------------------------------------------------------------------------------------------
SELECT throws_ok($$SELECT ctxgraph.evict_tips('stig', 'infinity', false)$$, '22023', NULL,
                 'evict_tips at infinity raises 22023 (it would record tips retired at infinity)');
SELECT throws_ok($$SELECT ctxgraph.evict_tips('stig', '-infinity', true)$$, '22023', NULL,
                 'evict_tips at -infinity raises 22023, a dry run too');
SELECT throws_ok(format($$SELECT ctxgraph.restore_tip('stig', %s, 'infinity')$$, :tip_a), '22023', NULL,
                 'restore_tip at infinity raises 22023');
SELECT throws_ok($$SELECT * FROM ctxgraph.tip_evidence('stig', 'infinity')$$, '22023', NULL,
                 'tip_evidence at infinity raises 22023');
SELECT throws_ok($$SELECT * FROM ctxgraph.fit_state('stig', 'infinity')$$, '22023', NULL,
                 'fit_state at infinity raises 22023');
SELECT throws_ok($$SELECT * FROM ctxgraph.fit_state('stig', NULL)$$, '22004', NULL,
                 'fit_state with a NULL as_of raises 22004');
SELECT throws_ok($$SELECT * FROM ctxgraph.fit_evidence('stig', 'infinity')$$, '22023', NULL,
                 'fit_evidence at infinity raises 22023');
SELECT throws_ok($$SELECT * FROM ctxgraph.fit_evidence('stig', NULL)$$, '22004', NULL,
                 'fit_evidence with a NULL as_of raises 22004');
SELECT throws_ok($$SELECT ctxgraph.write_tip_fit('stig', 'infinity', 0, '{}', '{}')$$, '22023', NULL,
                 'write_tip_fit at infinity raises 22023 (it would stamp a fit as of infinity)');
SELECT throws_ok($$SELECT ctxgraph.write_tip_fit('stig', NULL, 0, '{}', '{}')$$, '22004', NULL,
                 'write_tip_fit with a NULL as_of raises 22004');

-- ---------------------------------------------------------------------------------------------
-- A restored tip's baseline is its control's (9)
-- ---------------------------------------------------------------------------------------------
-- Two rules with the same history. Rule R (tip T, restored) and rule C (tip K, never evicted), each
-- with a second tip O. Run 1: 3 attempts retrieve the tip and O, the tip followed, all fail. T is
-- retired after run 1 and restored before run 2. Run 2: 5 attempts retrieve O alone and pass on
-- attempts 1..5 (1.0, 0.8, 0.8, 0.5, 0.5). Run 3: 2 attempts retrieve the tip and O, followed, pass
-- (1.0, 0.8). The rule's baseline for its tip is the rule without the tip: run 2, mean 0.72. The
-- restored tip is judged on run 3 alone, but its run-1 attempts are still its own, not attempts
-- that did not retrieve it (which would give a baseline of 3.6 / 8 = 0.45).
SELECT tests.make_tip('ic20', 'R', 'restored tip T') AS t_tip, tests.make_tip('ic20', 'R', 'other tip of R') AS t_other,
       tests.make_tip('ic20', 'C', 'control tip K') AS k_tip, tests.make_tip('ic20', 'C', 'other tip of C') AS k_other \gset
DO $$
DECLARE
    rule   record;
    n      integer;
BEGIN
    FOR rule IN SELECT * FROM (VALUES ('R', 'restored tip T', 'other tip of R'), ('C', 'control tip K', 'other tip of C'))
                                AS r (id, tip_body, other_body) LOOP
        FOR n IN 1 .. 3 LOOP
            PERFORM tests.make_attempt_with_retrievals('ic20', 'rb-run-1', rule.id, n,
                ARRAY(SELECT id FROM ic20.tips WHERE body IN (rule.tip_body, rule.other_body) ORDER BY id),
                false, 'clean_failure', '2026-11-02 10:00+00'::timestamptz + n * interval '10 minutes');
        END LOOP;
        FOR n IN 1 .. 5 LOOP
            PERFORM tests.make_attempt_with_retrievals('ic20', 'rb-run-2', rule.id, n,
                ARRAY(SELECT id FROM ic20.tips WHERE body = rule.other_body), true, NULL,
                '2026-11-05 10:00+00'::timestamptz + n * interval '10 minutes');
        END LOOP;
        FOR n IN 1 .. 2 LOOP
            PERFORM tests.make_attempt_with_retrievals('ic20', 'rb-run-3', rule.id, n,
                ARRAY(SELECT id FROM ic20.tips WHERE body IN (rule.tip_body, rule.other_body) ORDER BY id),
                true, NULL, '2026-11-06 10:00+00'::timestamptz + n * interval '10 minutes');
        END LOOP;
    END LOOP;
END
$$;
UPDATE ic20.tip_retrievals SET tip_followed_llm = true WHERE tip_id IN (:t_tip, :k_tip);
INSERT INTO ctxgraph.tip_evictions (skill, tip_id, retired_at, reason, evidence, restored_at)
VALUES ('ic20', :t_tip, '2026-11-03 00:00+00', 'test', '{}', '2026-11-04 00:00+00');

CREATE TEMP TABLE evidence_now AS
SELECT tip_id, followed_attempts, round(baseline_attempts::numeric, 9) AS baseline_attempts,
       round(rule_baseline::numeric, 9) AS rule_baseline
  FROM ctxgraph.tip_evidence('ic20', '2026-11-30 00:00+00') WHERE tip_id IN (:t_tip, :k_tip);
SELECT is((SELECT followed_attempts FROM evidence_now WHERE tip_id = :t_tip), 2::float8,
          'the restored tip is judged on its 2 attempts after the restore');
SELECT is((SELECT followed_attempts FROM evidence_now WHERE tip_id = :k_tip), 5::float8, 'the control on all 5 of its attempts');
SELECT is((SELECT rule_baseline FROM evidence_now WHERE tip_id = :k_tip), 0.72, 'the control''s baseline is its rule without it: 0.72');
SELECT is((SELECT rule_baseline FROM evidence_now WHERE tip_id = :t_tip), (SELECT rule_baseline FROM evidence_now WHERE tip_id = :k_tip),
          'maintained path: the restored tip''s baseline equals the control''s');
SELECT is((SELECT baseline_attempts FROM evidence_now WHERE tip_id = :t_tip), (SELECT baseline_attempts FROM evidence_now WHERE tip_id = :k_tip),
          'maintained path: the restored tip''s baseline counts the control''s attempts (its own are not the baseline''s)');

-- A retrieval dated after the instant sends the same question to the log path.
INSERT INTO ic20.tip_retrievals (run_id, tip_id, rule_id, rank, retrieved_at) VALUES ('rb-run-3', :t_other, 'R', 1, '2027-01-01 00:00+00');
CREATE TEMP TABLE evidence_log AS
SELECT tip_id, followed_attempts, round(baseline_attempts::numeric, 9) AS baseline_attempts,
       round(rule_baseline::numeric, 9) AS rule_baseline
  FROM ctxgraph.tip_evidence('ic20', '2026-11-30 00:00+00') WHERE tip_id IN (:t_tip, :k_tip);
SELECT set_eq('SELECT * FROM evidence_log', 'SELECT * FROM evidence_now', 'log path: the same figures as the maintained path');
SELECT is((SELECT rule_baseline FROM evidence_log WHERE tip_id = :t_tip), 0.72, 'log path: the restored tip''s baseline is 0.72');
SELECT is((SELECT baseline_attempts FROM evidence_log WHERE tip_id = :t_tip), 5::numeric, 'log path: over the rule''s 5 attempts without it');
-- Before the restore, the tip is judged on run 1 with the same baseline (run 2 has not happened).
SELECT is((SELECT round(rule_baseline::numeric, 9) FROM ctxgraph.tip_evidence('ic20', '2026-11-03 12:00+00') WHERE tip_id = :t_tip),
          NULL::numeric, 'before run 2, the rule has no attempt without the tip: no baseline');

SELECT * FROM finish();
ROLLBACK;
