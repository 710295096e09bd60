-- Verify ctxgraph:function_fit_io on pg

SELECT tip_id, evidence_version FROM ctxgraph.tip_effects WHERE FALSE;
SELECT 1 / (SELECT bool_and(p.prosecdef)::int FROM pg_catalog.pg_proc AS p
             WHERE p.oid IN ('ctxgraph.fit_snapshot(text)'::regprocedure, 'ctxgraph.fit_evidence(text, timestamptz)'::regprocedure,
                             'ctxgraph.tip_fit_staging()'::regprocedure,
                             'ctxgraph.write_tip_fit(text, timestamptz, numeric, jsonb, jsonb)'::regprocedure));
SELECT 1 / has_function_privilege('ctxgraph_scorer', 'ctxgraph.write_tip_fit(text, timestamptz, numeric, jsonb, jsonb)', 'EXECUTE')::int;
SELECT 1 / (NOT has_function_privilege('ctxgraph_ranker', 'ctxgraph.fit_evidence(text, timestamptz)', 'EXECUTE'))::int;
-- Behaviour, rolled back: a staged fit of every tip is written and recorded; a staged fit missing a
-- tip is refused and leaves the last one.
DO $$
DECLARE
    tip bigint;
    other bigint;
BEGIN
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'verify tip') RETURNING id INTO tip;
    PERFORM ctxgraph.tip_fit_staging();
    INSERT INTO pg_temp.ctxgraph_tip_fit (tip_id, attempts, followed_attempts, method, evidence_version)
    SELECT t.id, 0, 0, 'no_evidence', coalesce(s.evidence_version, 0)
      FROM ctxgraph.tips AS t LEFT JOIN ctxgraph.tip_stats AS s ON s.skill = t.skill AND s.tip_id = t.id
     WHERE t.skill = 'stig';
    PERFORM ctxgraph.write_tip_fit('stig', '2100-01-01', fp.evidence_version, fp.parameters, '{"verify": 1}')
       FROM ctxgraph._tip_effects_fingerprint('stig') AS fp;
    IF (SELECT as_of FROM ctxgraph.tip_effects WHERE skill = 'stig' AND tip_id = tip) <> '2100-01-01'
       OR (SELECT e.evidence_version <> fp.evidence_version
             FROM ctxgraph.tip_effect_fits AS e, ctxgraph._tip_effects_fingerprint('stig') AS fp
            WHERE e.skill = 'stig') THEN
        RAISE EXCEPTION 'verify: write_tip_fit did not write the staged fit';
    END IF;
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'another tip') RETURNING id INTO other;
    PERFORM ctxgraph.tip_fit_staging();
    INSERT INTO pg_temp.ctxgraph_tip_fit (tip_id, attempts, followed_attempts, method, evidence_version)
    VALUES (tip, 0, 0, 'no_evidence', 0);
    BEGIN
        PERFORM ctxgraph.write_tip_fit('stig', '2100-01-02', 43, '{}', '{}');
        RAISE EXCEPTION 'verify: write_tip_fit accepted a fit without every tip';
    EXCEPTION WHEN invalid_parameter_value THEN NULL;
    END;
    RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'rollback';
EXCEPTION WHEN assert_failure THEN NULL;
END
$$;
