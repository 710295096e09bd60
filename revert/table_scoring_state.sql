-- Revert ctxgraph:table_scoring_state from pg

BEGIN;

DROP TABLE ctxgraph.retrieval_scores;
DROP TABLE ctxgraph.follow_verdicts;

COMMIT;
