-- Verify ctxgraph:view_run_overview on pg

SELECT skill, run_id, attempts, rules, retrievals, with_outcome, scored, unscored, judge_verdicts, cosines,
       followed, first_retrieval, last_retrieval
  FROM ctxgraph.run_overview WHERE FALSE;
SELECT skill, run_id, leg, reason, retrievals FROM ctxgraph.scoring_null_reasons WHERE FALSE;
SELECT run_id, scored FROM stig.run_overview WHERE FALSE;
