-- Deploy ctxgraph:view_scored_retrievals to pg
-- requires: view_scored_retrievals@v0.4.0
-- requires: function_follow_weight
-- requires: column_follow_probability
-- requires: skill_provisioning
-- requires: table_tip_stats

-- Rework: the one per-retrieval definition decides with the follow probability too. When the
-- judge is silent, a retrieval with a follow probability takes the signal branch (follow_source
-- 'signal', follow.weight.signal_followed / signal_ignored) before the cosine; rows without one
-- read exactly as before. The probability itself is appended as the last column, the only place
-- CREATE OR REPLACE VIEW can add one; the per-skill projections are made again from it so they
-- show it too. Every consumer (tip_stats, the effects, eviction, the audit) reads this view, so
-- they follow; the maintained stats of tips whose rows carry a probability are recomputed here,
-- the only rows whose weight this changes.
BEGIN;

CREATE OR REPLACE VIEW ctxgraph.scored_retrievals AS
SELECT r.skill,
       r.id AS retrieval_id,
       r.tip_id,
       -- One attempt's rows are one observation; a legacy row with no attempt stands alone.
       coalesce(r.attempt_id, -r.id) AS attempt_key,
       r.attempt_id,
       r.run_id,
       r.rule_id,
       r.retrieved_at,
       r.outcome_value * coalesce(r.outcome_confidence, 1.0) AS credit,
       ctxgraph.follow_verdict(f.decision) AS followed,
       -- ctxgraph.param raises on a missing coefficient: never a silent 0 or NULL weight.
       ctxgraph.param('follow.weight.' || f.decision) AS follow_weight,
       CASE split_part(f.decision, '_', 1)
           WHEN 'judge' THEN 'judge' WHEN 'signal' THEN 'signal' WHEN 'emb' THEN 'embedding' ELSE 'none'
       END AS follow_source,
       f.decision AS follow_decision,
       ctxgraph.known_cosine(r.tip_followed_emb) AS cosine,
       -- The attempt's failure mode broke the system; a row with no attempt: a negative outcome.
       -- A correlated primary-key lookup rather than a join, so that a per-tip read stays an index
       -- scan whatever the (often missing) statistics of the partitioned parents say.
       coalesce((SELECT fm.is_harm
                   FROM ctxgraph.attempts AS a
                   JOIN ctxgraph.failure_modes AS fm ON fm.name = a.failure_mode
                  WHERE a.skill = r.skill AND a.id = r.attempt_id),
                r.outcome_value < 0) AS harmful,
       r.follow_probability
  FROM ctxgraph.tip_retrievals AS r
  -- The thresholds as uncorrelated scalar subqueries: read (and checked) once per query.
  CROSS JOIN LATERAL (SELECT ctxgraph.follow_decision(r.tip_followed_llm, r.tip_followed_emb, r.follow_probability,
                                                      (SELECT ctxgraph.param('follow.emb_threshold')),
                                                      (SELECT ctxgraph.param('follow.probability_threshold'))) AS decision) AS f
 WHERE r.outcome_value IS NOT NULL;

COMMENT ON COLUMN ctxgraph.scored_retrievals.followed IS 'The follow verdict: the judge''s, else follow_probability >= follow.probability_threshold, else cosine >= follow.emb_threshold, else NULL.';
COMMENT ON COLUMN ctxgraph.scored_retrievals.follow_source IS 'Where the verdict came from: judge, signal (the follow probability), embedding, or none.';
COMMENT ON COLUMN ctxgraph.scored_retrievals.follow_probability IS 'The calibrated probability that the script followed the tip (tip_retrievals.follow_probability); it decides when the judge is silent.';

DO $$
DECLARE
    skill_name text;
    batch      record;
BEGIN
    -- The projections select a fixed column list: made again, they gain the new column (with the
    -- comments and grants of ctxgraph.scored_retrievals). The view stays registered.
    FOR skill_name IN SELECT s.name FROM ctxgraph.skills AS s ORDER BY s.name LOOP
        EXECUTE format('DROP VIEW %I.scored_retrievals', skill_name);
        PERFORM ctxgraph._create_skill_view(skill_name, 'scored_retrievals');
    END LOOP;
    FOR batch IN
        SELECT r.skill, array_agg(DISTINCT r.tip_id) AS tip_ids
          FROM ctxgraph.tip_retrievals AS r WHERE r.follow_probability IS NOT NULL GROUP BY r.skill
    LOOP
        PERFORM ctxgraph.refresh_tip_stats(batch.skill, batch.tip_ids);
    END LOOP;
END
$$;

COMMIT;
