-- Verify ctxgraph:view_follow_agreement on pg

SELECT skill, judged, both_followed, judge_only_followed, emb_only_followed, both_ignored, agreement, kappa,
       threshold, best_threshold, best_kappa
  FROM ctxgraph.follow_agreement WHERE FALSE;
SELECT judged, kappa, best_threshold FROM stig.follow_agreement WHERE FALSE;
-- One row per skill, reporting the threshold in force.
SELECT 1 / (count(*) = (SELECT count(*) FROM ctxgraph.skills)
            AND bool_and(threshold = ctxgraph.param('follow.emb_threshold')))::int
  FROM ctxgraph.follow_agreement;
-- A missing parameter is an error, never a silent answer (rolled back; one judged row so that
-- the parameter is needed).
DO $$
DECLARE
    tip bigint;
BEGIN
    INSERT INTO stig.runs (id) VALUES ('verify-param-run');
    INSERT INTO stig.tips (rule_id, body) VALUES ('verify-rule', 'verify tip') RETURNING id INTO tip;
    INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, outcome_value, tip_followed_llm, tip_followed_emb)
    SELECT 'verify-param-run', tip, 'verify-rule', g, 1.0, true, 0.0 FROM generate_series(1, 5) AS g;
    DELETE FROM ctxgraph.parameters WHERE name = 'follow.emb_threshold';
    PERFORM count(q.*) FROM (SELECT kappa FROM ctxgraph.follow_agreement) AS q;
    RAISE EXCEPTION 'verify: answered without parameter follow.emb_threshold';
EXCEPTION WHEN invalid_parameter_value THEN NULL;
END
$$;
