-- Verify ctxgraph:view_scored_retrievals on pg

SELECT skill, retrieval_id, tip_id, attempt_key, attempt_id, run_id, rule_id, retrieved_at, credit, followed,
       follow_weight, follow_source, follow_decision, cosine, harmful
  FROM ctxgraph.scored_retrievals WHERE FALSE;
SELECT retrieval_id, tip_id, attempt_key, credit, followed, follow_weight, follow_source, harmful
  FROM stig.scored_retrievals WHERE FALSE;
SELECT 1 / has_table_privilege('ctxgraph_ranker', 'ctxgraph.scored_retrievals', 'SELECT')::int;
SELECT 1 / (NOT has_table_privilege('ctxgraph_writer', 'ctxgraph.scored_retrievals', 'SELECT'))::int;
-- Behaviour, rolled back, on three hand-built rows: a judged-followed pass at attempt 1, a
-- cosine-ignored health failure, and an unlinked legacy row with no follow signal; plus one row
-- with no outcome, which the view leaves out.
DO $$
DECLARE
    tip  bigint;
    a1   bigint;
    a2   bigint;
    r    record;
BEGIN
    INSERT INTO ctxgraph.tips (skill, rule_id, body) VALUES ('stig', 'verify-rule', 'verify tip') RETURNING id INTO tip;
    a1 := ctxgraph.save_attempt('stig', 'verify-run', 'verify-rule', 1, NULL, '2026-01-01 10:00+00');
    a2 := ctxgraph.save_attempt('stig', 'verify-run', 'verify-rule', 2, NULL, '2026-01-01 11:00+00');
    INSERT INTO ctxgraph.tip_retrievals (skill, run_id, attempt_id, tip_id, rule_id, rank, outcome_value, outcome_confidence,
                                         tip_followed_llm, tip_followed_emb, retrieved_at)
    VALUES ('stig', 'verify-run', NULL, tip, 'verify-rule', 1, 0.5, 0.5, NULL, NULL, '2026-01-01 09:00+00'),
           ('stig', 'verify-run', NULL, tip, 'verify-rule', 1, NULL, NULL, true, NULL, '2026-01-01 09:30+00');
    UPDATE ctxgraph.attempts SET passed = true WHERE skill = 'stig' AND id = a1;
    UPDATE ctxgraph.attempts SET passed = false, failure_mode = 'health_failure' WHERE skill = 'stig' AND id = a2;
    INSERT INTO ctxgraph.tip_retrievals (skill, run_id, attempt_id, tip_id, rule_id, rank, outcome_value, outcome_confidence,
                                         tip_followed_llm, tip_followed_emb, retrieved_at)
    VALUES ('stig', 'verify-run', a1, tip, 'verify-rule', 1, 1.0, 1.0, true, 0.1, '2026-01-01 10:00+00'),
           ('stig', 'verify-run', a2, tip, 'verify-rule', 1, -0.2, 1.0, NULL, 0.0, '2026-01-01 11:00+00');
    IF (SELECT count(*) FROM ctxgraph.scored_retrievals WHERE skill = 'stig' AND tip_id = tip) <> 3 THEN
        RAISE EXCEPTION 'verify: scored_retrievals does not hold exactly the rows with a known outcome';
    END IF;
    FOR r IN SELECT * FROM ctxgraph.scored_retrievals WHERE skill = 'stig' AND tip_id = tip LOOP
        IF r.attempt_id = a1 AND NOT (r.attempt_key = a1 AND r.credit = 1.0 AND r.followed AND r.follow_source = 'judge'
                                     AND r.follow_weight = ctxgraph.param('follow.weight.judge_followed') AND NOT r.harmful) THEN
            RAISE EXCEPTION 'verify: wrong judged row %', row_to_json(r);
        ELSIF r.attempt_id = a2 AND NOT (r.credit = -0.2 AND NOT r.followed AND r.follow_source = 'embedding'
                                        AND r.follow_weight = ctxgraph.param('follow.weight.emb_ignored') AND r.harmful) THEN
            RAISE EXCEPTION 'verify: wrong embedding row %', row_to_json(r);
        ELSIF r.attempt_id IS NULL AND NOT (r.attempt_key = -r.retrieval_id AND r.credit = 0.25 AND r.followed IS NULL
                                           AND r.follow_source = 'none' AND NOT r.harmful
                                           AND r.follow_weight = ctxgraph.param('follow.weight.unscored')) THEN
            RAISE EXCEPTION 'verify: wrong unlinked row %', row_to_json(r);
        END IF;
    END LOOP;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
