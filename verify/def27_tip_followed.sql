-- Verify ctxgraph:def27_tip_followed on pg

SELECT tip_followed_llm, tip_followed_emb, tip_followed_computed_at FROM ctxgraph.tip_retrievals WHERE FALSE;
-- The columns reach every skill's partition, present ones included.
SELECT tip_followed_llm, tip_followed_emb, tip_followed_computed_at FROM stig.tip_retrievals WHERE FALSE;
SELECT 1 / COUNT(*) FROM pg_catalog.pg_index
 WHERE indrelid = 'ctxgraph.tip_retrievals'::regclass
   AND indexrelid = 'ctxgraph.tip_retrievals_unscored_idx'::regclass AND indpred IS NOT NULL;

-- The scorer may set exactly the three follow columns, on the parent and on every partition; the
-- writer may not.
SELECT 1 / (COUNT(*) = 0)::int
  FROM (SELECT 'ctxgraph.tip_retrievals'::regclass AS rel
        UNION ALL SELECT inhrelid::regclass FROM pg_catalog.pg_inherits WHERE inhparent = 'ctxgraph.tip_retrievals'::regclass) AS t
 WHERE NOT (pg_catalog.has_column_privilege('ctxgraph_scorer', t.rel, 'tip_followed_llm', 'UPDATE')
            AND pg_catalog.has_column_privilege('ctxgraph_scorer', t.rel, 'tip_followed_emb', 'UPDATE')
            AND pg_catalog.has_column_privilege('ctxgraph_scorer', t.rel, 'tip_followed_computed_at', 'UPDATE')
            AND NOT pg_catalog.has_column_privilege('ctxgraph_scorer', t.rel, 'outcome_value', 'UPDATE')
            AND NOT pg_catalog.has_column_privilege('ctxgraph_writer', t.rel, 'tip_followed_llm', 'UPDATE'));

-- A cosine outside [-1, 1] is refused; NaN is accepted (follow_weight reads it as NULL).
BEGIN;
DO $$
DECLARE
    run text := 'sqitch-verify-' || gen_random_uuid();
    tip bigint;
BEGIN
    INSERT INTO stig.tips (body) VALUES ('probe') RETURNING id INTO tip;
    INSERT INTO stig.runs (id) VALUES (run);
    INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, tip_followed_llm, tip_followed_emb)
    VALUES (run, tip, 'sqitch_verify_rule', 1, true, 'NaN'), (run, tip, 'sqitch_verify_rule', 2, NULL, -1);
    BEGIN
        INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, tip_followed_emb) VALUES (run, tip, 'r', 1, 1.5);
        RAISE EXCEPTION 'tip_followed_emb accepted 1.5';
    EXCEPTION WHEN check_violation THEN NULL;
    END;
END
$$;
ROLLBACK;
