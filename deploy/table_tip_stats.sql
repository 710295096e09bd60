-- Deploy ctxgraph:table_tip_stats to pg
-- requires: table_tip_stats@v0.7.0
-- requires: table_group_roles

-- Rework: the analyst's SELECT on the maintained levels goes through ctxgraph._grant, which names
-- the roles from ctxgraph.group_roles, instead of spelling them. The same grant; the levels, their
-- functions and triggers are those of the earlier instance (table_tip_stats@v0.7.0.sql, delta
-- maintenance over table_tip_stats@v0.5.0.sql), unchanged.
BEGIN;

DO $$ BEGIN PERFORM ctxgraph._grant(
    'SELECT ON ctxgraph.tip_attempt_stats, ctxgraph.tip_rule_stats, ctxgraph.tip_run_stats, '
    'ctxgraph.rule_attempt_stats, ctxgraph.rule_stats',
    '{analyst}'); END $$;

COMMIT;
