-- Verify ctxgraph:table_skills on pg

SELECT name, grading, description, created_at FROM ctxgraph.skills WHERE FALSE;

-- Every group role reads the registry; only add_skill (run by the owner) writes it.
SELECT 1 / (COUNT(*) = 4)::int
  FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_writer', 'ctxgraph_scorer', 'ctxgraph_ranker', 'ctxgraph_analyst')
   AND pg_catalog.has_table_privilege(r.oid, 'ctxgraph.skills', 'SELECT')
   AND NOT pg_catalog.has_table_privilege(r.oid, 'ctxgraph.skills', 'INSERT, UPDATE, DELETE');

-- The CHECKs: a skill name becomes a schema name, so reserved or odd names and unknown gradings
-- are refused. A failing INSERT leaves nothing behind; an accepted one aborts the block.
DO $$
DECLARE
    probe record;
BEGIN
    FOR probe IN SELECT * FROM (VALUES
        ('public', 'graded'), ('pg_probe', 'graded'), ('ctxgraph', 'binary'), ('Upper', 'graded'),
        ('sqitch_verify_probe', 'sometimes'), ('sqitch_verify_probe', NULL)
    ) AS p (name, grading) LOOP
        BEGIN
            INSERT INTO ctxgraph.skills (name, grading) VALUES (probe.name, probe.grading);
            RAISE EXCEPTION 'no error' USING ERRCODE = 'VRFY1';
        EXCEPTION WHEN check_violation OR not_null_violation THEN NULL;
                  WHEN OTHERS THEN
            RAISE EXCEPTION 'skills accepted or mis-rejected (%, %): % %', probe.name, probe.grading, SQLSTATE, SQLERRM;
        END;
    END LOOP;
END
$$;
