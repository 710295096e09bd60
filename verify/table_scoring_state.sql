-- Verify ctxgraph:table_scoring_state on pg

SELECT tip_sha256, script_sha256, model, prompt_sha256, followed, reasoning, error, response_format, created_at
  FROM ctxgraph.follow_verdicts WHERE FALSE;
SELECT skill, retrieval_id, llm_status, emb_status, judge_model, prompt_sha256, embed_model, embed_mode,
       script_sha256, scored_at
  FROM ctxgraph.retrieval_scores WHERE FALSE;
-- A retrieval's score row goes with it.
SELECT 1 / COUNT(*) FROM pg_catalog.pg_constraint
 WHERE conrelid = 'ctxgraph.retrieval_scores'::regclass AND contype = 'f'
   AND confrelid = 'ctxgraph.tip_retrievals'::regclass AND confdeltype = 'c';

-- The scorer owns its caches (read, insert, update; no delete); analysts read; writer and ranker do not.
SELECT 1 / (COUNT(*) = 2)::int FROM (VALUES ('ctxgraph.follow_verdicts'), ('ctxgraph.retrieval_scores')) AS t (rel)
 WHERE pg_catalog.has_table_privilege('ctxgraph_scorer', t.rel, 'SELECT')
   AND pg_catalog.has_table_privilege('ctxgraph_scorer', t.rel, 'INSERT')
   AND pg_catalog.has_table_privilege('ctxgraph_scorer', t.rel, 'UPDATE')
   AND NOT pg_catalog.has_table_privilege('ctxgraph_scorer', t.rel, 'DELETE')
   AND pg_catalog.has_table_privilege('ctxgraph_analyst', t.rel, 'SELECT')
   AND NOT pg_catalog.has_table_privilege('ctxgraph_analyst', t.rel, 'INSERT, UPDATE, DELETE')
   AND NOT pg_catalog.has_table_privilege('ctxgraph_writer', t.rel, 'SELECT, INSERT, UPDATE, DELETE')
   AND NOT pg_catalog.has_table_privilege('ctxgraph_ranker', t.rel, 'SELECT');

-- Behaviour, rolled back: a cached verdict is an answer or a permanent error, never both or
-- neither, and keys are sha256 hex; a score row needs its retrieval.
BEGIN;
INSERT INTO ctxgraph.follow_verdicts (tip_sha256, script_sha256, model, prompt_sha256, followed)
VALUES (repeat('a', 64), repeat('b', 64), 'sqitch-verify-model', repeat('c', 64), true);
DO $$
DECLARE
    probe record;
BEGIN
    FOR probe IN SELECT * FROM (VALUES
        ('23514', format('INSERT INTO ctxgraph.follow_verdicts (tip_sha256, script_sha256, model, prompt_sha256, followed, error) VALUES (%L, %L, %L, %L, true, %L)',
                         repeat('a', 64), repeat('d', 64), 'm', repeat('c', 64), 'unparseable')),
        ('23514', format('INSERT INTO ctxgraph.follow_verdicts (tip_sha256, script_sha256, model, prompt_sha256) VALUES (%L, %L, %L, %L)',
                         repeat('a', 64), repeat('e', 64), 'm', repeat('c', 64))),
        ('23514', format('INSERT INTO ctxgraph.follow_verdicts (tip_sha256, script_sha256, model, prompt_sha256, followed) VALUES (%L, %L, %L, %L, true)',
                         'not-a-hash', repeat('e', 64), 'm', repeat('c', 64))),
        ('23505', format('INSERT INTO ctxgraph.follow_verdicts (tip_sha256, script_sha256, model, prompt_sha256, followed) VALUES (%L, %L, %L, %L, false)',
                         repeat('a', 64), repeat('b', 64), 'sqitch-verify-model', repeat('c', 64))),
        ('23503', $q$INSERT INTO ctxgraph.retrieval_scores (skill, retrieval_id, llm_status, emb_status) VALUES ('stig', -1, 'judged', 'computed')$q$)
    ) AS p (sqlstate, statement) LOOP
        BEGIN
            EXECUTE probe.statement;
            RAISE EXCEPTION 'no error' USING ERRCODE = 'VRFY1';
        EXCEPTION WHEN OTHERS THEN
            IF SQLSTATE <> probe.sqlstate THEN
                RAISE EXCEPTION 'expected SQLSTATE % from %, got % (%)', probe.sqlstate, probe.statement, SQLSTATE, SQLERRM;
            END IF;
        END;
    END LOOP;
END
$$;
ROLLBACK;
