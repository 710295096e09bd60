-- Verify ctxgraph:view_follow_agreement on pg

SELECT skill, judged, both_followed, judge_only_followed, emb_only_followed, both_ignored, agreement, kappa,
       threshold, best_threshold, best_kappa
  FROM ctxgraph.follow_agreement WHERE FALSE;
SELECT judged, both_followed, judge_only_followed, emb_only_followed, both_ignored, agreement, kappa,
       threshold, best_threshold, best_kappa
  FROM stig.follow_agreement WHERE FALSE;
SELECT 'ctxgraph.cohen_kappa(bigint, bigint, bigint, bigint)'::regprocedure;
SELECT 1 / (pg_catalog.has_table_privilege('ctxgraph_analyst', 'stig.follow_agreement', 'SELECT')
            AND pg_catalog.has_table_privilege('ctxgraph_analyst', 'ctxgraph.follow_agreement', 'SELECT')
            AND NOT pg_catalog.has_table_privilege('ctxgraph_ranker', 'ctxgraph.follow_agreement', 'SELECT')
            AND NOT pg_catalog.has_table_privilege('ctxgraph_writer', 'ctxgraph.follow_agreement', 'SELECT'))::int;

-- Cohen's kappa by hand: (20, 5, 10, 15) of 50: observed 0.7, expected 0.5, kappa 0.4;
-- perfect agreement 1; all four cells empty is undefined.
SELECT 1 / (abs(ctxgraph.cohen_kappa(20, 5, 10, 15) - 0.4) < 1e-12
            AND ctxgraph.cohen_kappa(5, 0, 0, 5) = 1
            AND ctxgraph.cohen_kappa(0, 0, 0, 0) IS NULL)::int;

-- Behaviour, rolled back: four probe rows, one per cell at the current threshold (inclusive),
-- plus rows with a NaN cosine or no verdict that do not count, move each count by exactly one.
BEGIN;
CREATE TEMPORARY TABLE verify_before ON COMMIT DROP AS SELECT * FROM ctxgraph.follow_agreement WHERE skill = 'stig';
DO $$
DECLARE
    run text := 'sqitch-verify-' || gen_random_uuid();
    t   double precision := ctxgraph.param('follow.emb_threshold');
    tip bigint;
BEGIN
    INSERT INTO stig.tips (body) VALUES ('probe') RETURNING id INTO tip;
    INSERT INTO stig.runs (id) VALUES (run);
    INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, tip_followed_llm, tip_followed_emb)
    VALUES (run, tip, 'r', 1, true, t), (run, tip, 'r', 2, true, t - 1e-6), (run, tip, 'r', 3, false, t),
           (run, tip, 'r', 4, false, t - 1e-6), (run, tip, 'r', 5, true, 'NaN'), (run, tip, 'r', 6, NULL, t);
END
$$;
SELECT 1 / (a.judged = coalesce(b.judged, 0) + 4 AND a.both_followed = coalesce(b.both_followed, 0) + 1
            AND a.judge_only_followed = coalesce(b.judge_only_followed, 0) + 1
            AND a.emb_only_followed = coalesce(b.emb_only_followed, 0) + 1
            AND a.both_ignored = coalesce(b.both_ignored, 0) + 1
            AND a.agreement = (a.both_followed + a.both_ignored)::double precision / a.judged
            AND a.kappa IS NOT DISTINCT FROM ctxgraph.cohen_kappa(a.both_followed, a.judge_only_followed,
                                                                  a.emb_only_followed, a.both_ignored)
            AND a.threshold = ctxgraph.param('follow.emb_threshold') AND a.best_threshold IS NOT NULL)::int
  FROM ctxgraph.follow_agreement AS a LEFT JOIN verify_before AS b ON TRUE
 WHERE a.skill = 'stig';
ROLLBACK;
