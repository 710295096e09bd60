-- Verify ctxgraph:function_follow_label_metrics on pg

SELECT leg, labelled, covered, accuracy, kappa, auc, threshold, best_threshold, best_accuracy
  FROM ctxgraph.follow_label_metrics('stig', ARRAY[]::bigint[], ARRAY[]::boolean[]) WHERE FALSE;
-- Behaviour, rolled back: two labelled rows the judge gets right and the cosine separates
-- perfectly (AUC 1) although one lies below the threshold.
DO $$
DECLARE
    tip bigint;
    ids bigint[];
    m   record;
BEGIN
    INSERT INTO stig.runs (id) VALUES ('verify-run');
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'verify tip') RETURNING id INTO tip;
    INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, tip_followed_llm, tip_followed_emb)
    VALUES ('verify-run', tip, 'verify-rule', 1, true, -0.5), ('verify-run', tip, 'verify-rule', 2, false, -0.9);
    ids := ARRAY(SELECT id FROM stig.tip_retrievals WHERE tip_id = tip ORDER BY rank);
    FOR m IN SELECT * FROM ctxgraph.follow_label_metrics('stig', ids, ARRAY[true, false]) LOOP
        IF m.leg = 'judge' AND (m.covered <> 2 OR m.accuracy <> 1) THEN
            RAISE EXCEPTION 'verify: judge leg %', row_to_json(m);
        ELSIF m.leg = 'embedding' AND (m.covered <> 2 OR m.auc <> 1 OR m.threshold <> ctxgraph.param('follow.emb_threshold')) THEN
            RAISE EXCEPTION 'verify: embedding leg %', row_to_json(m);
        END IF;
    END LOOP;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
-- Arrays of different lengths are refused, not padded.
DO $$
BEGIN
    PERFORM ctxgraph.follow_label_metrics('stig', ARRAY[1, 2]::bigint[], ARRAY[true]);
    RAISE EXCEPTION 'verify: follow_label_metrics padded mismatched arrays';
EXCEPTION WHEN invalid_parameter_value THEN NULL;
END
$$;
