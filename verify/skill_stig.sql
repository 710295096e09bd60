-- Verify ctxgraph:skill_stig on pg

SELECT 1 / COUNT(*) FROM ctxgraph.skills WHERE name = 'stig' AND grading = 'graded';
SELECT skill, id, started_at, ended_at FROM stig.runs WHERE FALSE;
SELECT skill, id, run_id, rule_id, attempt_number, passed, failure_mode, approach, started_at, ended_at
  FROM stig.attempts WHERE FALSE;
SELECT skill, id, rule_id, body, embedding, created_at, retired_at FROM stig.tips WHERE FALSE;
SELECT skill, id, run_id, attempt_id, tip_id, rule_id, rank, similarity_score, outcome_value,
       outcome_confidence, retrieved_at
  FROM stig.tip_retrievals WHERE FALSE;

-- Each is the 'stig' partition of its ctxgraph parent, not a look-alike table.
SELECT 1 / (COUNT(*) = 4)::int
  FROM pg_catalog.pg_inherits AS i
  JOIN pg_catalog.pg_class AS c ON c.oid = i.inhrelid
 WHERE (i.inhparent, i.inhrelid) IN (('ctxgraph.runs'::regclass, 'stig.runs'::regclass),
                                     ('ctxgraph.attempts'::regclass, 'stig.attempts'::regclass),
                                     ('ctxgraph.tips'::regclass, 'stig.tips'::regclass),
                                     ('ctxgraph.tip_retrievals'::regclass, 'stig.tip_retrievals'::regclass))
   AND pg_catalog.pg_get_expr(c.relpartbound, c.oid) = 'FOR VALUES IN (''stig'')';

-- The schema is usable by every group role, and the partitions carry their parents' privileges
-- (users query stig.* directly, where the parents' grants do not apply).
SELECT 1 / (COUNT(*) = 4)::int FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_writer', 'ctxgraph_scorer', 'ctxgraph_ranker', 'ctxgraph_analyst')
   AND pg_catalog.has_schema_privilege(r.oid, 'stig', 'USAGE');
SELECT 1 / (pg_catalog.has_column_privilege('ctxgraph_writer', 'stig.attempts', 'rule_id', 'INSERT')
            AND pg_catalog.has_column_privilege('ctxgraph_writer', 'stig.runs', 'ended_at', 'UPDATE')
            AND NOT pg_catalog.has_column_privilege('ctxgraph_writer', 'stig.attempts', 'rule_id', 'UPDATE')
            AND pg_catalog.has_table_privilege('ctxgraph_analyst', 'stig.tip_retrievals', 'SELECT')
            AND NOT pg_catalog.has_table_privilege('ctxgraph_analyst', 'stig.tip_retrievals', 'INSERT')
            AND pg_catalog.has_table_privilege('ctxgraph_ranker', 'stig.tips', 'SELECT')
            AND NOT pg_catalog.has_table_privilege('ctxgraph_ranker', 'stig.tip_retrievals', 'SELECT'))::int;

-- A plain INSERT into stig.tips needs no skill and lands in the parent as a stig row; a row of
-- another skill is refused by the partition bound. Rolled back.
BEGIN;
INSERT INTO stig.tips (rule_id, body) VALUES ('sqitch_verify_rule', 'sqitch verify probe');
SELECT 1 / COUNT(*) FROM ctxgraph.tips
 WHERE skill = 'stig' AND id = currval('ctxgraph.tips_id_seq') AND body = 'sqitch verify probe';
DO $$
BEGIN
    INSERT INTO stig.tips (skill, body) VALUES ('sqitch_verify_other', 'probe');
    RAISE EXCEPTION 'stig.tips accepted a row of another skill';
EXCEPTION WHEN check_violation OR foreign_key_violation THEN NULL;
END
$$;
ROLLBACK;
