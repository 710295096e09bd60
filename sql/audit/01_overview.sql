-- Audit 1: overview. Per run: attempts, retrievals, outcome and follow-score coverage, then why
-- follow columns are NULL (per run and leg). Run: psql -v skill=stig -f sql/audit/01_overview.sql
-- Optional: -v run=run-7 (one run only). `ctxgraph audit` runs this file too (--run sets run).
\set ON_ERROR_STOP 1
\pset footer off
\pset format wrapped
\if :{?run}
\else
\set run ''
\endif
\echo '== Coverage per run (skill' :skill ')'
-- section: overview
SELECT run_id, attempts, rules, retrievals, with_outcome, scored, unscored, judge_verdicts, cosines, followed
  FROM ctxgraph.run_overview
 WHERE skill = :'skill' AND (:'run' = '' OR run_id = :'run')
 ORDER BY first_retrieval;
\echo '== Why follow columns are NULL'
-- section: null_reasons
SELECT run_id, leg, reason, retrievals
  FROM ctxgraph.scoring_null_reasons
 WHERE skill = :'skill' AND (:'run' = '' OR run_id = :'run')
 ORDER BY run_id, leg, retrievals DESC, reason;
