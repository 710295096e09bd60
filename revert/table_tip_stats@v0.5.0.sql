-- Revert ctxgraph:table_tip_stats from pg

-- Back to the update trigger as released at @v0.4.0, which does not watch follow_probability.
BEGIN;

CREATE OR REPLACE FUNCTION ctxgraph._tip_stats_after_retrievals_change()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ctxgraph, pg_temp
AS $$
DECLARE
    batch record;
BEGIN
    IF TG_OP = 'INSERT' THEN
        FOR batch IN SELECT n.skill, array_agg(DISTINCT n.tip_id) AS tip_ids FROM new_rows AS n GROUP BY n.skill LOOP
            PERFORM ctxgraph.refresh_tip_stats(batch.skill, batch.tip_ids);
        END LOOP;
    ELSIF TG_OP = 'DELETE' THEN
        FOR batch IN SELECT o.skill, array_agg(DISTINCT o.tip_id) AS tip_ids FROM old_rows AS o GROUP BY o.skill LOOP
            PERFORM ctxgraph.refresh_tip_stats(batch.skill, batch.tip_ids);
        END LOOP;
    ELSE
        -- Only rows whose aggregated columns changed; a no-op UPDATE costs nothing.
        FOR batch IN
            SELECT changed.skill, array_agg(DISTINCT changed.tip_id) AS tip_ids
              FROM (SELECT o.skill, o.tip_id FROM old_rows AS o JOIN new_rows AS n ON n.skill = o.skill AND n.id = o.id
                     WHERE (o.tip_id, o.attempt_id, o.outcome_value, o.outcome_confidence, o.tip_followed_llm,
                            o.tip_followed_emb, o.retrieved_at)
                           IS DISTINCT FROM
                           (n.tip_id, n.attempt_id, n.outcome_value, n.outcome_confidence, n.tip_followed_llm,
                            n.tip_followed_emb, n.retrieved_at)
                    UNION ALL
                    SELECT n.skill, n.tip_id FROM old_rows AS o JOIN new_rows AS n ON n.skill = o.skill AND n.id = o.id
                     WHERE n.tip_id <> o.tip_id) AS changed
             GROUP BY changed.skill
        LOOP
            PERFORM ctxgraph.refresh_tip_stats(batch.skill, batch.tip_ids);
        END LOOP;
    END IF;
    RETURN NULL;
END
$$;

COMMIT;
