-- Verify ctxgraph:skill_cve on pg

SELECT 1 / COUNT(*) FROM ctxgraph.skills WHERE name = 'cve' AND grading = 'binary';
SELECT skill, id, started_at, ended_at FROM cve.runs WHERE FALSE;
SELECT skill, id, run_id, rule_id, attempt_number, passed, failure_mode, approach, started_at, ended_at
  FROM cve.attempts WHERE FALSE;
SELECT skill, id, rule_id, body, embedding, created_at, retired_at FROM cve.tips WHERE FALSE;
SELECT skill, id, run_id, attempt_id, tip_id, rule_id, rank, similarity_score, outcome_value,
       outcome_confidence, retrieved_at
  FROM cve.tip_retrievals WHERE FALSE;

-- Each is the 'cve' partition of its ctxgraph parent, not a look-alike table.
SELECT 1 / (COUNT(*) = 4)::int
  FROM pg_catalog.pg_inherits AS i
  JOIN pg_catalog.pg_class AS c ON c.oid = i.inhrelid
 WHERE (i.inhparent, i.inhrelid) IN (('ctxgraph.runs'::regclass, 'cve.runs'::regclass),
                                     ('ctxgraph.attempts'::regclass, 'cve.attempts'::regclass),
                                     ('ctxgraph.tips'::regclass, 'cve.tips'::regclass),
                                     ('ctxgraph.tip_retrievals'::regclass, 'cve.tip_retrievals'::regclass))
   AND pg_catalog.pg_get_expr(c.relpartbound, c.oid) = 'FOR VALUES IN (''cve'')';

-- The schema is usable by every group role, and the partitions carry their parents' privileges
-- (users query cve.* directly, where the parents' grants do not apply).
SELECT 1 / (COUNT(*) = 4)::int FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_writer', 'ctxgraph_scorer', 'ctxgraph_ranker', 'ctxgraph_analyst')
   AND pg_catalog.has_schema_privilege(r.oid, 'cve', 'USAGE');
SELECT 1 / (pg_catalog.has_column_privilege('ctxgraph_writer', 'cve.attempts', 'rule_id', 'INSERT')
            AND pg_catalog.has_column_privilege('ctxgraph_writer', 'cve.runs', 'ended_at', 'UPDATE')
            AND NOT pg_catalog.has_column_privilege('ctxgraph_writer', 'cve.attempts', 'rule_id', 'UPDATE')
            AND pg_catalog.has_table_privilege('ctxgraph_analyst', 'cve.tip_retrievals', 'SELECT')
            AND NOT pg_catalog.has_table_privilege('ctxgraph_analyst', 'cve.tip_retrievals', 'INSERT')
            AND pg_catalog.has_table_privilege('ctxgraph_ranker', 'cve.tips', 'SELECT')
            AND NOT pg_catalog.has_table_privilege('ctxgraph_ranker', 'cve.tip_retrievals', 'SELECT'))::int;

-- A plain INSERT into cve.tips needs no skill and lands in the parent as a cve row; a row of
-- another skill is refused by the partition bound. Rolled back.
BEGIN;
INSERT INTO cve.tips (rule_id, body) VALUES ('sqitch_verify_rule', 'sqitch verify probe');
SELECT 1 / COUNT(*) FROM ctxgraph.tips
 WHERE skill = 'cve' AND id = currval('ctxgraph.tips_id_seq') AND body = 'sqitch verify probe';
DO $$
BEGIN
    INSERT INTO cve.tips (skill, body) VALUES ('sqitch_verify_other', 'probe');
    RAISE EXCEPTION 'cve.tips accepted a row of another skill';
EXCEPTION WHEN check_violation OR foreign_key_violation THEN NULL;
END
$$;
ROLLBACK;
