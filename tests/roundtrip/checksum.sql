-- One line per user-data table (every partition of the skill tables, and the skills registry):
-- table, row count, md5 of its rows as JSON without the DEF-27 columns (and follow_probability, a
-- later change's column the same revert removes), ordered by primary key. Compared before and after
-- `sqitch revert --to def27_tip_followed^`: only those columns may go.
-- Run with psql -X -A -t: \gexec runs one generated query per table.
SELECT format(
         $q$SELECT %L || ' ' || count(*) || ' '
                   || md5(coalesce(string_agg((to_jsonb(t) - 'tip_followed_llm' - 'tip_followed_emb'
                                               - 'tip_followed_computed_at' - 'follow_probability')::text, E'\n' ORDER BY %s), ''))
              FROM %s AS t$q$,
         tab, order_by, tab)
  FROM (
    SELECT i.inhrelid::regclass::text AS tab, 't.skill, t.id' AS order_by
      FROM pg_catalog.pg_inherits AS i
     WHERE i.inhparent IN ('ctxgraph.runs'::regclass, 'ctxgraph.attempts'::regclass,
                           'ctxgraph.tips'::regclass, 'ctxgraph.tip_retrievals'::regclass)
    UNION ALL
    SELECT 'ctxgraph.skills', 't.name'
  ) AS tables
 ORDER BY tab
\gexec
