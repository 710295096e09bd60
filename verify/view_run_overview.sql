-- Verify ctxgraph:view_run_overview on pg

SELECT skill, run_id, attempts, rules, retrievals, with_outcome, scored, unscored, judge_verdicts, cosines,
       followed, first_retrieval, last_retrieval
  FROM ctxgraph.run_overview WHERE FALSE;
SELECT skill, run_id, leg, reason, retrievals FROM ctxgraph.scoring_null_reasons WHERE FALSE;
SELECT run_id, scored FROM stig.run_overview WHERE FALSE;
-- Behaviour, rolled back: a NaN cosine is not counted as a cosine.
DO $$
DECLARE
    tip bigint;
    o   record;
BEGIN
    INSERT INTO stig.runs (id) VALUES ('verify-run');
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'verify tip') RETURNING id INTO tip;
    INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, tip_followed_emb)
    VALUES ('verify-run', tip, 'verify-rule', 1, 0.9), ('verify-run', tip, 'verify-rule', 2, 'NaN');
    SELECT * INTO o FROM stig.run_overview WHERE run_id = 'verify-run';
    IF o.retrievals <> 2 OR o.cosines <> 1 OR o.followed <> ctxgraph.tip_followed(NULL, 0.9)::int THEN
        RAISE EXCEPTION 'verify: run_overview counted %', row_to_json(o);
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
