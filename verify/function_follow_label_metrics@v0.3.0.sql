-- Verify ctxgraph:function_follow_label_metrics on pg

SELECT 'ctxgraph.follow_label_metrics(text, bigint[], boolean[])'::regprocedure;
SELECT 1 / pg_catalog.has_function_privilege('ctxgraph_analyst', 'ctxgraph.follow_label_metrics(text, bigint[], boolean[])', 'EXECUTE')::int;

-- Behaviour, rolled back, by hand: gold (T, T, F, F), judge (T, T, F, T), cosines (0.9, 0.7, 0.2, 0.8).
-- Judge: accuracy 3/4, kappa of (2, 1, 0, 1) = 0.5. Embedding: AUC 3/4 (0.7 < 0.8 is the one
-- mis-ordered pair), best threshold 0.7 at accuracy 3/4 (0.9 ties; the lower wins), and its
-- accuracy at the threshold in force. An unlabelled extra id and a NULL label are ignored.
BEGIN;
DO $$
DECLARE
    run text := 'sqitch-verify-' || gen_random_uuid();
    t   double precision := ctxgraph.param('follow.emb_threshold');
    tip bigint;
    ids bigint[];
    j   record;
    e   record;
BEGIN
    INSERT INTO stig.tips (body) VALUES ('probe') RETURNING id INTO tip;
    INSERT INTO stig.runs (id) VALUES (run);
    WITH inserted AS (
        INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, tip_followed_llm, tip_followed_emb)
        VALUES (run, tip, 'r', 1, true, 0.9), (run, tip, 'r', 2, true, 0.7), (run, tip, 'r', 3, false, 0.2),
               (run, tip, 'r', 4, true, 0.8), (run, tip, 'r', 5, true, 0.1)
        RETURNING id, rank)
    SELECT array_agg(id ORDER BY rank) INTO ids FROM inserted;

    SELECT * INTO j FROM ctxgraph.follow_label_metrics('stig', ids, ARRAY[true, true, false, false, NULL]) AS m WHERE m.leg = 'judge';
    SELECT * INTO e FROM ctxgraph.follow_label_metrics('stig', ids, ARRAY[true, true, false, false, NULL]) AS m WHERE m.leg = 'embedding';
    IF NOT (j.labelled = 4 AND j.covered = 4 AND j.accuracy = 0.75 AND abs(j.kappa - 0.5) < 1e-12) IS TRUE THEN
        RAISE EXCEPTION 'follow_label_metrics judge leg: %', j;
    END IF;
    IF NOT (e.labelled = 4 AND e.covered = 4 AND abs(e.auc - 0.75) < 1e-12 AND e.threshold = t
            AND e.best_threshold = 0.7 AND e.best_accuracy = 0.75
            AND e.accuracy = (SELECT avg(((v.emb >= t) = v.gold)::int::double precision)
                                FROM (VALUES (0.9, true), (0.7, true), (0.2, false), (0.8, false)) AS v (emb, gold))) IS TRUE THEN
        RAISE EXCEPTION 'follow_label_metrics embedding leg: %', e;
    END IF;
END
$$;
ROLLBACK;
