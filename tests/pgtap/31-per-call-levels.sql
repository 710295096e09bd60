-- A long run of per-call writes reads the maintained levels by key, however small they were when the
-- session planned its statements. The write path keeps its generic plans for the session; made on a
-- fresh deployment's levels (analysed while empty, no statistics on skill), "skill = $1 AND key =
-- ANY (ids)" was planned as an index scan on skill alone with the key as a filter, and every write
-- read the skill's whole level: a per-call load of 3,000 attempts went from 4.3 ms per attempt at
-- 250 to 59 ms at 3,000. Here the rows the write path reads from the levels are counted per window
-- of 40 attempts, early and after 400: they stay what the attempts touch (five tips each), where
-- the whole-level reads grew with every attempt (1,811 rows per attempt early, 7,133 after 400).
-- pg_stat_xact_user_tables counts this transaction's reads without waiting for a stats flush.
BEGIN;
SELECT plan(7);

SELECT lives_ok($$SELECT ctxgraph.add_skill('flatload', 'graded', 'Per-call levels test skill.')$$,
                'a new skill, its log and levels empty');

-- The flatload skill's partitions of the given tables.
CREATE FUNCTION pg_temp.flat_partitions(parents regclass[]) RETURNS SETOF regclass LANGUAGE sql AS $$
    SELECT tests.skill_partitions('flatload', parents)
$$;
CREATE TEMP TABLE flat_levels AS
SELECT pg_temp.flat_partitions(ARRAY['ctxgraph.tip_stats', 'ctxgraph.tip_attempt_stats', 'ctxgraph.tip_rule_stats',
                                     'ctxgraph.tip_run_stats', 'ctxgraph.rule_attempt_stats',
                                     'ctxgraph.rule_stats']::regclass[]) AS level;
SELECT is((SELECT count(*) FROM flat_levels)::integer, 6, 'the skill has a partition of each of the six levels');

-- The statistics of a fresh deployment: every partition of the skill analysed while empty.
DO $$
DECLARE l regclass;
BEGIN
    FOR l IN SELECT pg_temp.flat_partitions(ARRAY['ctxgraph.tip_stats', 'ctxgraph.tip_attempt_stats',
                                                  'ctxgraph.tip_rule_stats', 'ctxgraph.tip_run_stats',
                                                  'ctxgraph.rule_attempt_stats', 'ctxgraph.rule_stats',
                                                  'ctxgraph.tips', 'ctxgraph.runs', 'ctxgraph.attempts',
                                                  'ctxgraph.tip_retrievals']::regclass[]) LOOP
        EXECUTE format('ANALYZE %s', l);
    END LOOP;
END
$$;

CREATE FUNCTION pg_temp.level_rows_read() RETURNS bigint LANGUAGE sql AS $$
    SELECT coalesce(sum(coalesce(s.idx_tup_fetch, 0) + coalesce(s.seq_tup_read, 0)), 0)::bigint
      FROM pg_stat_xact_user_tables AS s JOIN flat_levels AS l ON l.level = s.relid
$$;

-- 200 tips over 20 rules; attempt g is at rule g mod 20 and retrieves five of its ten tips, through
-- log_retrievals, save_attempt, update_retrieval_attempt_ids and record_outcome (a third fail).
CREATE TEMP TABLE flat_tips AS
SELECT tests.make_tip('flatload', 'flat-rule-' || (n % 20), 'flat tip ' || n) AS id, 'flat-rule-' || (n % 20) AS rule_id
  FROM generate_series(1, 200) AS n;
CREATE FUNCTION pg_temp.write_attempts(first integer, last integer) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    before bigint := pg_temp.level_rows_read();
    rule   text;
BEGIN
    FOR g IN first .. last LOOP
        rule := 'flat-rule-' || (g % 20);
        PERFORM tests.make_attempt_with_retrievals(
                    'flatload', 'flat-run', rule, g / 20 + 1,
                    ARRAY(SELECT t.id FROM flat_tips AS t WHERE t.rule_id = rule ORDER BY t.id LIMIT 5 OFFSET (g / 20) % 6),
                    g % 3 <> 0, CASE WHEN g % 3 = 0 THEN 'clean_failure' END,
                    '2026-11-20 00:00+00'::timestamptz + g * interval '1 minute');
    END LOOP;
    RETURN pg_temp.level_rows_read() - before;
END
$$;

-- The first attempts plan the write path on the empty levels; the windows run on those plans.
CREATE TEMP TABLE level_reads (win text PRIMARY KEY, n bigint NOT NULL);
INSERT INTO level_reads SELECT 'planning', pg_temp.write_attempts(0, 19);
INSERT INTO level_reads SELECT 'early', pg_temp.write_attempts(20, 59);
INSERT INTO level_reads SELECT 'middle', pg_temp.write_attempts(60, 399);
INSERT INTO level_reads SELECT 'late', pg_temp.write_attempts(400, 439);

SELECT cmp_ok((SELECT n FROM level_reads WHERE win = 'late') * 4, '<', (SELECT n FROM level_reads WHERE win = 'early') * 5,
              'the 40 attempts after 400 read the levels as the 40 after 20 did (within a quarter)');
SELECT cmp_ok((SELECT n FROM level_reads WHERE win = 'late'), '<', 40 * 150::bigint,
              'under 150 level rows per attempt of five tips, where the levels hold thousands');

-- And the levels still hold what a from-scratch computation gives (tests/fixtures/maintained_references.sql).
SELECT set_eq($$SELECT * FROM tests.maintained_tips WHERE skill = 'flatload'$$,
              $$SELECT * FROM tests.reference_tips WHERE skill = 'flatload'$$, 'tips = reference');
SELECT set_eq($$SELECT * FROM tests.maintained_pairs WHERE skill = 'flatload'$$,
              $$SELECT * FROM tests.reference_pairs WHERE skill = 'flatload'$$, 'pairs = reference');
SELECT set_eq('SELECT * FROM tests.maintained_levels', 'SELECT * FROM tests.reference_levels',
              'the tip-rule, tip-run, attempt and rule levels = reference');

SELECT * FROM finish();
ROLLBACK;
