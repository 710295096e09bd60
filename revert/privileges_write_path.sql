-- Revert ctxgraph:privileges_write_path from pg

-- Back to the writer's earlier grants: INSERT on whole runs, attempts and tips, UPDATE of the
-- result and time columns of attempts, INSERT of every tip_retrievals column but
-- follow_probability and UPDATE of its link and outcome; the write path with the caller's rights.
BEGIN;

ALTER FUNCTION ctxgraph.save_attempt(text, text, text, integer, text, timestamptz, timestamptz)
    SECURITY INVOKER RESET search_path;
ALTER FUNCTION ctxgraph.log_retrievals(text, text, text, bigint[], double precision[], timestamptz)
    SECURITY INVOKER RESET search_path;
ALTER FUNCTION ctxgraph.update_retrieval_attempt_ids(text, bigint[], bigint)
    SECURITY INVOKER RESET search_path;
ALTER FUNCTION ctxgraph.record_outcome(text, bigint, boolean, text, timestamptz)
    SECURITY INVOKER RESET search_path;
ALTER FUNCTION ctxgraph.ingest_run_log(text)
    SECURITY INVOKER RESET search_path;

CREATE OR REPLACE FUNCTION ctxgraph.ingest_staging()
RETURNS text
LANGUAGE plpgsql
SECURITY INVOKER
AS $$
BEGIN
    IF to_regclass('pg_temp.ctxgraph_run_log') IS NULL THEN
        CREATE TEMPORARY TABLE ctxgraph_run_log (
            line              bigint NOT NULL,
            kind              text NOT NULL CHECK (kind IN ('retrieval', 'attempt', 'run_end')),
            run_id            text,
            rule_id           text,
            attempt_number    integer,
            retrieved_at      timestamptz,
            tip_ids           bigint[],
            similarity_scores double precision[],
            approach          text,
            started_at        timestamptz,
            ended_at          timestamptz,
            passed            boolean,
            failure_mode      text
        );
    ELSE
        TRUNCATE pg_temp.ctxgraph_run_log;
    END IF;
    RETURN 'pg_temp.ctxgraph_run_log';
END
$$;

DO $$
BEGIN
    PERFORM ctxgraph._revoke('INSERT ON ctxgraph.runs', '{writer}');
    PERFORM ctxgraph._grant('INSERT ON ctxgraph.runs', '{writer}');

    PERFORM ctxgraph._revoke('INSERT ON ctxgraph.attempts', '{writer}');
    PERFORM ctxgraph._grant('INSERT ON ctxgraph.attempts', '{writer}');
    PERFORM ctxgraph._grant('UPDATE (passed, failure_mode, approach, started_at, ended_at) ON ctxgraph.attempts',
                            '{writer}');

    PERFORM ctxgraph._revoke('INSERT ON ctxgraph.tips', '{writer}');
    PERFORM ctxgraph._grant('INSERT ON ctxgraph.tips', '{writer}');

    PERFORM ctxgraph._revoke('INSERT ON ctxgraph.tip_retrievals', '{writer}');
    PERFORM ctxgraph._grant('INSERT (skill, id, run_id, attempt_id, tip_id, rule_id, rank, similarity_score, '
                            'outcome_value, outcome_confidence, retrieved_at, tip_followed_llm, tip_followed_emb, '
                            'tip_followed_computed_at) ON ctxgraph.tip_retrievals', '{writer}');
    PERFORM ctxgraph._grant('UPDATE (attempt_id, outcome_value, outcome_confidence) ON ctxgraph.tip_retrievals',
                            '{writer}');

    PERFORM ctxgraph.ensure_skill_partitions();
END
$$;

COMMIT;
