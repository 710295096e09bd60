-- Verify ctxgraph:function_rule_ranking on pg

SELECT 'ctxgraph.rule_ranking(text, text)'::regprocedure;
SELECT 1 / (COUNT(*) = 2)::int FROM pg_catalog.pg_roles AS r
 WHERE r.rolname IN ('ctxgraph_ranker', 'ctxgraph_analyst')
   AND pg_catalog.has_function_privilege(r.oid, 'ctxgraph.rule_ranking(text, text)', 'EXECUTE');

-- Behaviour, rolled back, on a rule of its own: candidates are the rule's tips and the tips
-- retrieved for it (not another rule's unretrieved tip); the ranks are those of tip_hit_rates'
-- outcome_hit_rate (before) and hit_rate (after, retired tips last).
BEGIN;
DO $$
DECLARE
    run     text := 'sqitch-verify-' || gen_random_uuid();
    rule    text := 'sqitch_verify_rule_' || gen_random_uuid();
    ignored bigint;
    follow  bigint;
    other bigint;
    old_tip bigint;
    unseen  bigint;
    ids     bigint[];
    a       bigint;
    bad     integer;
BEGIN
    INSERT INTO stig.tips (rule_id, body) VALUES (rule, 'ignored') RETURNING id INTO ignored;
    INSERT INTO stig.tips (rule_id, body) VALUES (rule, 'followed') RETURNING id INTO follow;
    INSERT INTO stig.tips (rule_id, body) VALUES (rule, 'retired') RETURNING id INTO old_tip;
    INSERT INTO stig.tips (rule_id, body) VALUES ('sqitch_verify_other', 'foreign') RETURNING id INTO other;
    INSERT INTO stig.tips (rule_id, body) VALUES ('sqitch_verify_other', 'unseen') RETURNING id INTO unseen;
    ids := ARRAY(SELECT ctxgraph.log_retrievals('stig', run, rule, ARRAY[ignored, follow, other, old_tip], ARRAY[0.9, 0.8, 0.7, 0.6]));
    a := ctxgraph.save_attempt('stig', run, rule, 1);
    PERFORM ctxgraph.update_retrieval_attempt_ids('stig', ids, a);
    PERFORM ctxgraph.record_outcome('stig', a, true);
    UPDATE stig.tip_retrievals SET tip_followed_llm = (tip_id <> ignored) WHERE id = ANY (ids);
    UPDATE stig.tips SET retired_at = now() WHERE id = old_tip;

    IF ARRAY(SELECT x.tip_id FROM ctxgraph.rule_ranking('stig', rule) AS x ORDER BY x.tip_id)
       IS DISTINCT FROM ARRAY[ignored, follow, old_tip, other] THEN
        RAISE EXCEPTION 'rule_ranking candidates are wrong';
    END IF;
    SELECT count(*) INTO bad
      FROM ctxgraph.rule_ranking('stig', rule) AS x
      JOIN (SELECT h.tip_id, h.outcome_hit_rate, h.hit_rate, h.retired,
                   rank() OVER (ORDER BY h.outcome_hit_rate DESC NULLS LAST) AS outcome_rank,
                   rank() OVER (ORDER BY h.retired, h.hit_rate DESC NULLS LAST, h.utility_lower_bound DESC NULLS LAST) AS follow_rank
              FROM ctxgraph.tip_hit_rates AS h
             WHERE h.skill = 'stig' AND h.tip_id IN (ignored, follow, old_tip, other)) AS e ON e.tip_id = x.tip_id
     WHERE (x.outcome_rank, x.follow_rank, x.retired) IS DISTINCT FROM (e.outcome_rank, e.follow_rank, e.retired)
        OR x.hit_rate IS DISTINCT FROM e.hit_rate OR x.outcome_hit_rate IS DISTINCT FROM e.outcome_hit_rate;
    IF bad <> 0 OR NOT EXISTS (SELECT 1 FROM ctxgraph.rule_ranking('stig', rule) AS x
                                WHERE x.tip_id = old_tip AND x.follow_rank = 4 AND x.retired) THEN
        RAISE EXCEPTION 'rule_ranking ranks disagree with tip_hit_rates (% rows)', bad;
    END IF;
END
$$;
ROLLBACK;
