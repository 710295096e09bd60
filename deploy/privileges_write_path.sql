-- Deploy ctxgraph:privileges_write_path to pg
-- requires: function_save_attempt
-- requires: function_log_retrievals
-- requires: function_update_retrieval_attempt_ids
-- requires: function_record_outcome
-- requires: function_ingest_run_log
-- requires: column_follow_probability
-- requires: table_group_roles
-- requires: skill_provisioning

-- Least privilege for the writer. It held INSERT on whole tables and UPDATE on the link and
-- outcome columns, so it could log a retrieval with its own follow verdict (tip_followed_llm),
-- add a tip with its own embedding, created_at or retired_at (the scorer's cache, eviction's
-- state), and set attempt_id or outcome_value directly, past the checks
-- update_retrieval_attempt_ids and record_outcome make. Now:
--
--   * the writer INSERTs only the columns the write path fills: a run's id and start, an
--     attempt's run, rule, number, approach and times, a tip's rule and body, a retrieval's run,
--     tip, rule, rank, similarity and time. Ids come from the sequences; verdicts, cosines,
--     probabilities, embeddings, timestamps the database keeps, retirements, results, links and
--     outcomes are not the writer's to name;
--   * it UPDATEs only a run's end (the log's run_end line);
--   * the write-path functions run with their owner's rights (SECURITY DEFINER, a fixed
--     search_path, as every other owner-run function here), so they write the results, links
--     and outcomes the writer itself cannot, after their checks. ingest_staging makes the
--     session's staging table as the owner and lets the writer fill it; ingest_run_log reads it
--     as the owner.
--
-- Grants are made on the parents; ensure_skill_partitions copies them to every skill's
-- partitions, and add_skill does the same for a skill added later.
BEGIN;

ALTER FUNCTION ctxgraph.save_attempt(text, text, text, integer, text, timestamptz, timestamptz)
    SECURITY DEFINER SET search_path = pg_catalog, ctxgraph, pg_temp;
ALTER FUNCTION ctxgraph.log_retrievals(text, text, text, bigint[], double precision[], timestamptz)
    SECURITY DEFINER SET search_path = pg_catalog, ctxgraph, pg_temp;
ALTER FUNCTION ctxgraph.update_retrieval_attempt_ids(text, bigint[], bigint)
    SECURITY DEFINER SET search_path = pg_catalog, ctxgraph, pg_temp;
ALTER FUNCTION ctxgraph.record_outcome(text, bigint, boolean, text, timestamptz)
    SECURITY DEFINER SET search_path = pg_catalog, ctxgraph, pg_temp;
ALTER FUNCTION ctxgraph.ingest_run_log(text)
    SECURITY DEFINER SET search_path = pg_catalog, ctxgraph, pg_temp;

-- The staging table is made by the owner (so ingest_run_log, running as the owner, may read,
-- analyze and empty it) and only filled by the writer: INSERT, which COPY needs, and nothing else.
-- It is a temporary table, seen by this session alone.
CREATE OR REPLACE FUNCTION ctxgraph.ingest_staging()
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
BEGIN
    -- A staging table the caller made itself is refused, never emptied or reused: its triggers
    -- would run with the owner's rights (_refuse_foreign_temp_objects).
    PERFORM ctxgraph._refuse_foreign_temp_objects('ctxgraph_run_log');
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
        PERFORM ctxgraph._grant('INSERT ON pg_temp.ctxgraph_run_log', '{writer}');
    ELSE
        TRUNCATE pg_temp.ctxgraph_run_log;
    END IF;
    RETURN 'pg_temp.ctxgraph_run_log';
END
$$;

DO $$
BEGIN
    PERFORM ctxgraph._revoke('INSERT ON ctxgraph.runs', '{writer}');
    PERFORM ctxgraph._grant('INSERT (skill, id, started_at) ON ctxgraph.runs', '{writer}');

    -- Revoking a table privilege also revokes the column privileges of that kind.
    PERFORM ctxgraph._revoke('INSERT, UPDATE ON ctxgraph.attempts', '{writer}');
    PERFORM ctxgraph._grant('INSERT (skill, run_id, rule_id, attempt_number, approach, started_at, ended_at) '
                            'ON ctxgraph.attempts', '{writer}');

    PERFORM ctxgraph._revoke('INSERT ON ctxgraph.tips', '{writer}');
    PERFORM ctxgraph._grant('INSERT (skill, rule_id, body) ON ctxgraph.tips', '{writer}');

    PERFORM ctxgraph._revoke('INSERT, UPDATE ON ctxgraph.tip_retrievals', '{writer}');
    PERFORM ctxgraph._grant('INSERT (skill, run_id, tip_id, rule_id, rank, similarity_score, retrieved_at) '
                            'ON ctxgraph.tip_retrievals', '{writer}');

    PERFORM ctxgraph.ensure_skill_partitions();
END
$$;

COMMIT;
