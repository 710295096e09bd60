-- ctxgraph.cascade_track_record: the judge cascade's evidence from a skill's earlier runs, counted
-- per distinct question (tip, script) for one calibration, signal version and judge model, on a
-- small log whose counts a reader can check by hand (band [0.3, 0.8], judge j1):
--   run-a  t1 s1 p 0.90  judged by j1: followed      outside, checked, agrees
--          t2 s1 p 0.10  judged by j1: followed      outside, checked, disagrees
--          t3 s1 p 0.50  judged by j1: not followed  inside the band
--          t4 s1 p 0.95  decided by the signal       outside, not checked
--          t1 s2 p 0.05  judged by j2: followed      outside, not checked by j1
--          t4 s2 p 0.90  another signal version      not counted
--          t3 s2 p 0.10  another calibration         not counted (unless asked for)
--   run-b  t1 s1 p 0.90  decided by the signal       the same question as run-a's: counted once, judged
--          t2 s2 p 0.20  judged by j1: not followed  outside, checked, agrees
BEGIN;
SELECT plan(11);

CREATE FUNCTION pg_temp.scored(run text, rule text, tip bigint, script text, p double precision, verdict boolean,
                               status text, judge text, version text DEFAULT 'sig-1', fit bigint DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    attempt  bigint;
    n        integer;
BEGIN
    SELECT count(*) + 1 INTO n FROM ctxgraph.attempts AS a WHERE a.skill = 'stig' AND a.run_id = run AND a.rule_id = rule;
    attempt := tests.make_attempt_with_retrievals('stig', run, rule, n, ARRAY[tip], true);
    UPDATE ctxgraph.tip_retrievals AS r SET follow_probability = p, tip_followed_llm = verdict
     WHERE r.skill = 'stig' AND r.attempt_id = attempt;
    INSERT INTO ctxgraph.retrieval_scores (skill, retrieval_id, llm_status, emb_status, judge_model, script_sha256,
                                           signal_status, calibration_id, signal_version)
    SELECT 'stig', r.id, status, 'computed', judge, repeat(script, 64), 'computed', fit, version
      FROM ctxgraph.tip_retrievals AS r WHERE r.skill = 'stig' AND r.attempt_id = attempt;
END
$$;

SELECT array_agg(tests.make_tip('stig', 'track_rule', 'tip ' || n) ORDER BY n) AS tips FROM generate_series(1, 4) AS n \gset
SELECT ctxgraph.save_follow_calibration('stig', 'sig-1', 'logistic', '{a}', '{1.0}', 0.0, 'judge', 'track', 10, 5) AS fit \gset

SELECT pg_temp.scored('run-a', 'track_rule', (:'tips'::bigint[])[1], 'a', 0.90, true, 'judged', 'j1'),
       pg_temp.scored('run-a', 'track_rule', (:'tips'::bigint[])[2], 'a', 0.10, true, 'judged', 'j1'),
       pg_temp.scored('run-a', 'track_rule', (:'tips'::bigint[])[3], 'a', 0.50, false, 'judged', 'j1'),
       pg_temp.scored('run-a', 'track_rule', (:'tips'::bigint[])[4], 'a', 0.95, NULL, 'decided_by_signal', NULL),
       pg_temp.scored('run-a', 'track_rule', (:'tips'::bigint[])[1], 'b', 0.05, true, 'judged', 'j2'),
       pg_temp.scored('run-a', 'track_rule', (:'tips'::bigint[])[4], 'b', 0.90, true, 'judged', 'j1', 'sig-0'),
       pg_temp.scored('run-a', 'track_rule', (:'tips'::bigint[])[3], 'b', 0.10, true, 'judged', 'j1', 'sig-1', :fit),
       pg_temp.scored('run-b', 'track_rule', (:'tips'::bigint[])[1], 'a', 0.90, NULL, 'decided_by_signal', NULL),
       pg_temp.scored('run-b', 'track_rule', (:'tips'::bigint[])[2], 'b', 0.20, false, 'judged', 'j1');

SELECT results_eq($$SELECT * FROM ctxgraph.cascade_track_record('stig', NULL, 'sig-1', 'j1', 0.3, 0.8)$$,
                  $$VALUES (6::bigint, 5::bigint, 3::bigint, 1::bigint)$$,
                  'every run: 6 questions (run-b''s t1 s1 is run-a''s), 5 outside the band, 3 judged by j1, 1 against it');
SELECT results_eq($$SELECT * FROM ctxgraph.cascade_track_record('stig', NULL, 'sig-1', 'j1', 0.3, 0.8, 'run-b')$$,
                  $$VALUES (5::bigint, 4::bigint, 2::bigint, 1::bigint)$$,
                  'other_than_run leaves run-b out: t2 s2 is not counted, t1 s1 still is (run-a''s verdict)');
SELECT results_eq($$SELECT * FROM ctxgraph.cascade_track_record('stig', NULL, 'sig-1', 'j2', 0.3, 0.8)$$,
                  $$VALUES (6::bigint, 5::bigint, 1::bigint, 1::bigint)$$,
                  'another judge''s verdicts are no evidence about j1, and j1''s none about j2');
SELECT results_eq(format($$SELECT * FROM ctxgraph.cascade_track_record('stig', %s, 'sig-1', 'j1', 0.3, 0.8)$$, :fit),
                  $$VALUES (1::bigint, 1::bigint, 1::bigint, 1::bigint)$$,
                  'a stored calibration counts only the questions it scored');
SELECT results_eq($$SELECT * FROM ctxgraph.cascade_track_record('stig', NULL, 'sig-1', 'j1', 0.0, 1.0)$$,
                  $$VALUES (6::bigint, 0::bigint, 0::bigint, 0::bigint)$$,
                  'a band over the whole range leaves nothing outside it');
SELECT results_eq($$SELECT * FROM ctxgraph.cascade_track_record('cve', NULL, 'sig-1', 'j1', 0.3, 0.8)$$,
                  $$VALUES (0::bigint, 0::bigint, 0::bigint, 0::bigint)$$,
                  'another skill has no record');
SELECT throws_ok($$SELECT * FROM ctxgraph.cascade_track_record(NULL, NULL, 'sig-1', 'j1', 0.3, 0.8)$$,
                 '22004', NULL, 'a NULL skill is refused (22004)');
SELECT throws_ok($$SELECT * FROM ctxgraph.cascade_track_record('stig', NULL, 'sig-1', 'j1', NULL, 0.8)$$,
                 '22004', NULL, 'a NULL end of the band is refused (22004)');
SELECT throws_ok($$SELECT * FROM ctxgraph.cascade_track_record('nope', NULL, 'sig-1', 'j1', 0.3, 0.8)$$,
                 '22023', 'ctxgraph: unknown skill ''nope''', 'an unknown skill is refused (22023)');
SELECT throws_ok($$SELECT * FROM ctxgraph.cascade_track_record('stig', NULL, 'sig-1', 'j1', 0.8, 0.3)$$,
                 '22023', NULL, 'a band whose low end is above its high end is refused (22023)');
SELECT throws_ok($$SELECT * FROM ctxgraph.cascade_track_record('stig', NULL, 'sig-1', 'j1', 0.3, 'NaN')$$,
                 '22023', NULL, 'a NaN end of the band is refused (22023)');

SELECT * FROM finish();
ROLLBACK;
