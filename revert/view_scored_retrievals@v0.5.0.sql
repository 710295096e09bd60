-- Revert ctxgraph:view_scored_retrievals from pg

-- Back to the definition released at @v0.4.0. CREATE OR REPLACE VIEW cannot drop the appended
-- column, so the view and its projections are dropped and made again as they were (the view stays
-- registered in skill_views); the stats of tips whose rows carry a probability are recomputed, the
-- only rows whose weight this changes.
BEGIN;

DO $$
DECLARE
    skill_name text;
BEGIN
    FOR skill_name IN SELECT s.name FROM ctxgraph.skills AS s ORDER BY s.name LOOP
        EXECUTE format('DROP VIEW %I.scored_retrievals', skill_name);
    END LOOP;
END
$$;
DROP VIEW ctxgraph.scored_retrievals;

CREATE VIEW ctxgraph.scored_retrievals AS
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
       CASE split_part(f.decision, '_', 1) WHEN 'judge' THEN 'judge' WHEN 'emb' THEN 'embedding' ELSE 'none' END
           AS follow_source,
       f.decision AS follow_decision,
       ctxgraph.known_cosine(r.tip_followed_emb) AS cosine,
       -- The attempt's failure mode broke the system; a row with no attempt: a negative outcome.
       -- A correlated primary-key lookup rather than a join, so that a per-tip read stays an index
       -- scan whatever the (often missing) statistics of the partitioned parents say.
       coalesce((SELECT fm.is_harm
                   FROM ctxgraph.attempts AS a
                   JOIN ctxgraph.failure_modes AS fm ON fm.name = a.failure_mode
                  WHERE a.skill = r.skill AND a.id = r.attempt_id),
                r.outcome_value < 0) AS harmful
  FROM ctxgraph.tip_retrievals AS r
  -- The threshold as an uncorrelated scalar subquery: read (and checked) once per query.
  CROSS JOIN LATERAL (SELECT ctxgraph.follow_decision(r.tip_followed_llm, r.tip_followed_emb,
                                                      (SELECT ctxgraph.param('follow.emb_threshold'))) AS decision) AS f
 WHERE r.outcome_value IS NOT NULL;

COMMENT ON VIEW ctxgraph.scored_retrievals IS
    'One row per retrieval with a known outcome: credit, follow verdict, weight and source, harm. The one definition every aggregate, eviction, audit and test derives from.';
COMMENT ON COLUMN ctxgraph.scored_retrievals.skill IS 'The skill.';
COMMENT ON COLUMN ctxgraph.scored_retrievals.retrieval_id IS 'The retrieval (tip_retrievals.id).';
COMMENT ON COLUMN ctxgraph.scored_retrievals.tip_id IS 'The tip retrieved.';
COMMENT ON COLUMN ctxgraph.scored_retrievals.attempt_key IS 'The unit of evidence: the attempt id, or minus the retrieval id for a row linked to no attempt.';
COMMENT ON COLUMN ctxgraph.scored_retrievals.attempt_id IS 'The attempt, when linked.';
COMMENT ON COLUMN ctxgraph.scored_retrievals.run_id IS 'The run.';
COMMENT ON COLUMN ctxgraph.scored_retrievals.rule_id IS 'The rule the attempt was at.';
COMMENT ON COLUMN ctxgraph.scored_retrievals.retrieved_at IS 'When the tip was retrieved.';
COMMENT ON COLUMN ctxgraph.scored_retrievals.credit IS 'outcome_value * outcome_confidence (confidence 1.0 when NULL): the outcome-only credit.';
COMMENT ON COLUMN ctxgraph.scored_retrievals.followed IS 'The follow verdict: the judge''s, else cosine >= follow.emb_threshold, else NULL.';
COMMENT ON COLUMN ctxgraph.scored_retrievals.follow_weight IS 'The DEF-27 follow weight (ctxgraph.follow_weight): credit * follow_weight is the follow-weighted credit.';
COMMENT ON COLUMN ctxgraph.scored_retrievals.follow_source IS 'Where the verdict came from: judge, embedding, or none.';
COMMENT ON COLUMN ctxgraph.scored_retrievals.follow_decision IS 'The branch of the follow rule (ctxgraph.follow_decision); follow.weight.<branch> is the weight.';
COMMENT ON COLUMN ctxgraph.scored_retrievals.cosine IS 'The embedding leg''s cosine, NaN read as NULL.';
COMMENT ON COLUMN ctxgraph.scored_retrievals.harmful IS 'The attempt broke the system (its failure mode is a harm; for an unlinked row, a negative outcome).';

DO $$ BEGIN PERFORM ctxgraph._grant('SELECT ON ctxgraph.scored_retrievals', '{ranker,analyst}'); END $$;

DO $$
DECLARE
    skill_name text;
    batch      record;
BEGIN
    FOR skill_name IN SELECT s.name FROM ctxgraph.skills AS s ORDER BY s.name LOOP
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
