-- Verify ctxgraph:view_scored_retrievals on pg

SELECT skill, retrieval_id, tip_id, attempt_key, attempt_id, run_id, rule_id, retrieved_at, credit, followed,
       follow_weight, follow_source, follow_decision, cosine, harmful, follow_probability
  FROM ctxgraph.scored_retrievals WHERE FALSE;
SELECT retrieval_id, tip_id, attempt_key, credit, followed, follow_weight, follow_source, harmful, follow_probability
  FROM stig.scored_retrievals WHERE FALSE;
-- follow_probability is the last column, of the view and of every skill's projection.
SELECT 1 / (count(*) = (SELECT count(*) FROM ctxgraph.skills) + 1)::int
  FROM pg_catalog.pg_class AS c
 WHERE c.relname = 'scored_retrievals'
   AND (SELECT a.attname FROM pg_catalog.pg_attribute AS a
         WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum DESC LIMIT 1) = 'follow_probability';
-- follow_weight joins ctxgraph.parameters by name: the join keeps every retrieval once only while
-- name is the table's key.
SELECT 1 / count(*)::int
  FROM pg_catalog.pg_constraint AS c
 WHERE c.conrelid = 'ctxgraph.parameters'::regclass AND c.contype = 'p'
   AND c.conkey = ARRAY[(SELECT a.attnum FROM pg_catalog.pg_attribute AS a
                          WHERE a.attrelid = 'ctxgraph.parameters'::regclass AND a.attname = 'name')];
SELECT 1 / has_table_privilege('ctxgraph_ranker', 'ctxgraph.scored_retrievals', 'SELECT')::int;
SELECT 1 / has_table_privilege('ctxgraph_analyst', 'stig.scored_retrievals', 'SELECT')::int;
SELECT 1 / (NOT has_table_privilege('ctxgraph_writer', 'ctxgraph.scored_retrievals', 'SELECT'))::int;
SELECT 1 / (NOT has_table_privilege('ctxgraph_writer', 'stig.scored_retrievals', 'SELECT'))::int;
-- Behaviour, rolled back, on hand-built rows of one attempt that passed: a judged row with a
-- probability (the judge wins), a row with a probability at the threshold and a low cosine (the
-- signal decides: followed), one with a probability below it and a high cosine (ignored), and one
-- with no probability (the cosine decides as before).
DO $$
DECLARE
    tip  bigint;
    a1   bigint;
    pt   double precision := ctxgraph.param('follow.probability_threshold');
    r    record;
BEGIN
    INSERT INTO ctxgraph.tips (skill, rule_id, body) VALUES ('stig', 'verify-rule', 'verify tip') RETURNING id INTO tip;
    a1 := ctxgraph.save_attempt('stig', 'verify-run', 'verify-rule', 1, NULL, '2026-01-01 10:00+00');
    UPDATE ctxgraph.attempts SET passed = true WHERE skill = 'stig' AND id = a1;
    INSERT INTO ctxgraph.tip_retrievals (skill, run_id, attempt_id, tip_id, rule_id, rank, outcome_value, outcome_confidence,
                                         tip_followed_llm, tip_followed_emb, follow_probability, retrieved_at)
    VALUES ('stig', 'verify-run', a1, tip, 'verify-rule', 1, 1.0, 1.0, false, 0.99, 0.99, '2026-01-01 10:00+00'),
           ('stig', 'verify-run', a1, tip, 'verify-rule', 2, 1.0, 1.0, NULL, 0.0, pt, '2026-01-01 10:00+00'),
           ('stig', 'verify-run', a1, tip, 'verify-rule', 3, 1.0, 1.0, NULL, 0.99, pt - 0.001, '2026-01-01 10:00+00'),
           ('stig', 'verify-run', a1, tip, 'verify-rule', 4, 1.0, 1.0, NULL, 0.99, NULL, '2026-01-01 10:00+00');
    FOR r IN SELECT s.*, t.rank FROM stig.scored_retrievals AS s JOIN stig.tip_retrievals AS t ON t.id = s.retrieval_id
              WHERE s.tip_id = tip LOOP
        IF r.rank = 1 AND NOT (r.follow_source = 'judge' AND NOT r.followed AND r.follow_probability = 0.99
                               AND r.follow_weight = ctxgraph.param('follow.weight.judge_ignored')) THEN
            RAISE EXCEPTION 'verify: the judge does not win over the probability %', row_to_json(r);
        ELSIF r.rank = 2 AND NOT (r.follow_source = 'signal' AND r.followed AND r.follow_decision = 'signal_followed'
                                  AND r.follow_weight = ctxgraph.param('follow.weight.signal_followed')) THEN
            RAISE EXCEPTION 'verify: a probability at the threshold is not followed %', row_to_json(r);
        ELSIF r.rank = 3 AND NOT (r.follow_source = 'signal' AND NOT r.followed AND r.follow_decision = 'signal_ignored'
                                  AND r.follow_weight = ctxgraph.param('follow.weight.signal_ignored')) THEN
            RAISE EXCEPTION 'verify: the probability does not win over the cosine %', row_to_json(r);
        ELSIF r.rank = 4 AND NOT (r.follow_source = 'embedding' AND r.followed AND r.follow_probability IS NULL
                                  AND r.follow_weight = ctxgraph.param('follow.weight.emb_followed')) THEN
            RAISE EXCEPTION 'verify: a row without a probability does not fall back to the cosine %', row_to_json(r);
        END IF;
    END LOOP;
    IF (SELECT count(*) FROM stig.scored_retrievals WHERE tip_id = tip) <> 4 THEN
        RAISE EXCEPTION 'verify: stig.scored_retrievals does not hold the four rows';
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
