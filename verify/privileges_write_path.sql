-- Verify ctxgraph:privileges_write_path on pg

-- The write-path functions run with their owner's rights and a fixed search_path.
SELECT 1 / (count(*) FILTER (WHERE p.prosecdef AND p.proconfig @> ARRAY['search_path=pg_catalog, ctxgraph, pg_temp']) = 6)::int
  FROM pg_catalog.pg_proc AS p
 WHERE p.oid IN ('ctxgraph.save_attempt(text, text, text, integer, text, timestamptz, timestamptz)'::regprocedure,
                 'ctxgraph.log_retrievals(text, text, text, bigint[], double precision[], timestamptz)'::regprocedure,
                 'ctxgraph.update_retrieval_attempt_ids(text, bigint[], bigint)'::regprocedure,
                 'ctxgraph.record_outcome(text, bigint, boolean, text, timestamptz)'::regprocedure,
                 'ctxgraph.ingest_staging()'::regprocedure,
                 'ctxgraph.ingest_run_log(text)'::regprocedure);

-- On the parents and on every skill's partitions: the writer inserts the write-path columns and
-- nothing else, and updates only a run's end.
SELECT 1 / (count(*) FILTER (WHERE ok) = count(*) AND count(*) > 4)::int
  FROM (SELECT c.oid::regclass AS rel,
               CASE c.relname
                   WHEN 'runs' THEN ARRAY['skill', 'id', 'started_at']
                   WHEN 'attempts' THEN ARRAY['skill', 'run_id', 'rule_id', 'attempt_number', 'approach', 'started_at', 'ended_at']
                   WHEN 'tips' THEN ARRAY['skill', 'rule_id', 'body']
                   ELSE ARRAY['skill', 'run_id', 'tip_id', 'rule_id', 'rank', 'similarity_score', 'retrieved_at']
               END AS insertable,
               CASE c.relname WHEN 'runs' THEN ARRAY['ended_at'] ELSE '{}' END AS updatable
          FROM pg_catalog.pg_class AS c
         WHERE c.relname IN ('runs', 'attempts', 'tips', 'tip_retrievals') AND c.relkind IN ('r', 'p')
           AND (c.relnamespace = 'ctxgraph'::regnamespace
                OR c.relnamespace IN (SELECT n.oid FROM pg_catalog.pg_namespace AS n
                                        JOIN ctxgraph.skills AS s ON s.name = n.nspname))) AS t
 CROSS JOIN LATERAL (
        SELECT bool_and(pg_catalog.has_column_privilege('ctxgraph_writer', t.rel, a.attname, 'INSERT') = (a.attname = ANY (t.insertable))
                        AND pg_catalog.has_column_privilege('ctxgraph_writer', t.rel, a.attname, 'UPDATE') = (a.attname = ANY (t.updatable)))
               AND NOT pg_catalog.has_table_privilege('ctxgraph_writer', t.rel, 'INSERT')
               AND NOT pg_catalog.has_table_privilege('ctxgraph_writer', t.rel, 'UPDATE')
               AND pg_catalog.has_table_privilege('ctxgraph_writer', t.rel, 'SELECT') AS ok
          FROM pg_catalog.pg_attribute AS a
         WHERE a.attrelid = t.rel AND a.attnum > 0 AND NOT a.attisdropped) AS checked;

-- Behaviour, as the writer (rolled back): the write path works; forging a verdict or a link does not.
DO $$
DECLARE
    tip bigint;
    rid bigint;
    aid bigint;
BEGIN
    SET LOCAL ROLE ctxgraph_writer;
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'verify tip') RETURNING id INTO tip;
    SELECT r INTO rid FROM ctxgraph.log_retrievals('stig', 'verify-run', 'verify-rule', ARRAY[tip], ARRAY[0.9]) AS r;
    aid := ctxgraph.save_attempt('stig', 'verify-run', 'verify-rule', 1);
    PERFORM ctxgraph.update_retrieval_attempt_ids('stig', ARRAY[rid], aid);
    PERFORM ctxgraph.record_outcome('stig', aid, true);
    BEGIN
        INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, tip_followed_llm)
        VALUES ('verify-run', tip, 'verify-rule', 2, true);
        RAISE EXCEPTION 'verify: the writer inserted its own follow verdict';
    EXCEPTION WHEN insufficient_privilege THEN NULL;
    END;
    BEGIN
        UPDATE stig.tip_retrievals SET outcome_value = 1 WHERE id = rid;
        RAISE EXCEPTION 'verify: the writer updated an outcome directly';
    EXCEPTION WHEN insufficient_privilege THEN NULL;
    END;
    RESET ROLE;
    IF (SELECT outcome_value FROM stig.tip_retrievals WHERE id = rid) IS DISTINCT FROM 1.0::float8 THEN
        RAISE EXCEPTION 'verify: the write path did not link and grade the retrieval';
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
