-- Verify ctxgraph:table_failure_modes on pg

SELECT name, outcome_parameter, is_harm, description FROM ctxgraph.failure_modes WHERE FALSE;

-- The DEF-26 parameters this change inserts, by name (later changes add their own rows).
SELECT 1 / (COUNT(*) = 10)::int
  FROM ctxgraph.parameters
 WHERE name IN ('outcome.pass.first_attempt', 'outcome.pass.early', 'outcome.pass.early_last_attempt',
                'outcome.pass.late', 'outcome.fail.evaluator_gap', 'outcome.fail.clean_failure',
                'outcome.fail.health_failure', 'outcome.binary.pass', 'outcome.binary.fail',
                'outcome.confidence');

-- The three evaluator modes, each mapped to its own parameter; only a health failure is harm.
SELECT 1 / (COUNT(*) = 3)::int
  FROM ctxgraph.failure_modes
 WHERE (name, outcome_parameter, is_harm) IN (('evaluator_gap', 'outcome.fail.evaluator_gap', false),
                                              ('clean_failure', 'outcome.fail.clean_failure', false),
                                              ('health_failure', 'outcome.fail.health_failure', true));

-- A mode must name an existing parameter: the foreign key is there and enforced.
SELECT 1 / COUNT(*) FROM pg_catalog.pg_constraint
 WHERE conrelid = 'ctxgraph.failure_modes'::regclass AND contype = 'f'
   AND confrelid = 'ctxgraph.parameters'::regclass;
DO $$
BEGIN
    INSERT INTO ctxgraph.failure_modes (name, outcome_parameter, description)
    VALUES ('sqitch_verify_probe', 'sqitch_verify.no_such_parameter', 'probe');
    RAISE EXCEPTION 'failure_modes accepted a mode without a parameter';
EXCEPTION WHEN foreign_key_violation THEN NULL;
END
$$;

-- Every group role reads the modes; none may change them.
SELECT 1 / (COUNT(*) = 4)::int
  FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_writer', 'ctxgraph_scorer', 'ctxgraph_ranker', 'ctxgraph_analyst')
   AND pg_catalog.has_table_privilege(r.oid, 'ctxgraph.failure_modes', 'SELECT')
   AND NOT pg_catalog.has_table_privilege(r.oid, 'ctxgraph.failure_modes', 'INSERT, UPDATE, DELETE');
