-- Audit 1: overview. Per run: attempts, retrievals, outcome and follow-score coverage, then why
-- follow columns are NULL (per run and leg). Run: psql -v skill=stig -f sql/audit/01_overview.sql
\set ON_ERROR_STOP 1
\pset footer off
\echo '== Coverage per run (skill' :skill ')'
SELECT run_id, attempts, rules, retrievals, with_outcome, scored, unscored, judge_verdicts, cosines, followed
  FROM ctxgraph.run_overview
 WHERE skill = :'skill'
 ORDER BY first_retrieval;
\echo '== Why follow columns are NULL'
SELECT run_id, leg, reason, retrievals
  FROM ctxgraph.scoring_null_reasons
 WHERE skill = :'skill'
 ORDER BY run_id, leg, retrievals DESC;
