-- The write path probes the maintained levels by key, whatever their statistics said when the
-- session planned it. A generic plan is kept until the tables it reads are analysed again; made
-- while a skill's levels were empty (a new skill, a fresh load), it used to read each key by
-- scanning the level, which costs nothing then and the level's size per key once the level fills
-- (a 250,000-row INSERT into a fresh log ran for more than 15 minutes). Here a new skill's levels
-- are analysed while empty, the session plans on that, and no write may scan a level.
-- pg_stat_xact_user_tables counts this transaction's scans without waiting for a stats flush.
BEGIN;
SELECT plan(10);

SELECT lives_ok($$SELECT ctxgraph.add_skill('probes', 'binary', 'Level probes test skill.')$$,
                'a new skill, its levels empty');

-- The probes skill's partitions of the given tables, and ANALYZE of them.
CREATE FUNCTION pg_temp.probe_partitions(parents regclass[]) RETURNS SETOF regclass LANGUAGE sql AS $$
    SELECT tests.skill_partitions('probes', parents)
$$;
CREATE FUNCTION pg_temp.analyze_probe_partitions(parents regclass[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE l regclass;
BEGIN
    FOR l IN SELECT pg_temp.probe_partitions(parents) LOOP
        EXECUTE format('ANALYZE %s', l);
    END LOOP;
END $$;

-- The new skill's partitions of every maintained level, analysed while empty: the statistics a
-- fresh deployment has until autovacuum catches up.
CREATE TEMP TABLE probe_levels AS
SELECT pg_temp.probe_partitions(ARRAY['ctxgraph.tip_stats', 'ctxgraph.tip_attempt_stats', 'ctxgraph.tip_rule_stats',
                                      'ctxgraph.tip_run_stats', 'ctxgraph.rule_attempt_stats',
                                      'ctxgraph.rule_stats']::regclass[]) AS level;
SELECT is((SELECT count(*) FROM probe_levels)::integer, 6, 'the skill has a partition of each of the six levels');
SELECT pg_temp.analyze_probe_partitions(ARRAY(SELECT level FROM probe_levels));

-- Scans of the levels since here (add_skill's ATTACH PARTITION scanned each to validate it).
CREATE FUNCTION pg_temp.level_seq_scans() RETURNS bigint LANGUAGE sql AS $$
    SELECT coalesce(sum(s.seq_scan), 0)::bigint
      FROM pg_stat_xact_user_tables AS s JOIN probe_levels AS p ON p.level = s.relid
$$;
CREATE TEMP TABLE scans_before AS SELECT pg_temp.level_seq_scans() AS n;
CREATE FUNCTION pg_temp.level_seq_scans_since() RETURNS bigint LANGUAGE sql AS $$
    SELECT pg_temp.level_seq_scans() - (SELECT n FROM scans_before)
$$;

-- The first attempts plan the write path on the empty levels; more attempts, a bulk INSERT with
-- outcomes and a scorer write-back then run on those plans.
CREATE TEMP TABLE probe_tips AS
SELECT tests.make_tip('probes', 'probe-rule-' || (n % 4), 'probe tip ' || n) AS id, 'probe-rule-' || (n % 4) AS rule_id
  FROM generate_series(1, 40) AS n;
SELECT tests.make_attempt_with_retrievals('probes', 'probe-run', r.rule_id, g,
                                          ARRAY(SELECT t.id FROM probe_tips AS t WHERE t.rule_id = r.rule_id
                                                 ORDER BY t.id LIMIT 5 OFFSET g % 5),
                                          g % 3 <> 0, CASE WHEN g % 3 = 0 THEN 'clean_failure' END,
                                          '2026-11-20 00:00+00'::timestamptz + g * interval '1 hour')
  FROM (SELECT DISTINCT rule_id FROM probe_tips) AS r, generate_series(1, 6) AS g;
INSERT INTO ctxgraph.tip_retrievals (skill, run_id, attempt_id, tip_id, rule_id, rank, outcome_value,
                                     outcome_confidence, retrieved_at)
SELECT 'probes', 'probe-run', a.id, t.id, t.rule_id, 1, ctxgraph.graded_outcome('probes', true, a.attempt_number, NULL),
       1.0, a.started_at - interval '1 second'
  FROM ctxgraph.attempts AS a
  JOIN probe_tips AS t ON t.rule_id = a.rule_id
 WHERE a.skill = 'probes' AND a.passed;
SELECT is(pg_temp.level_seq_scans_since(), 0::bigint, 'logging, linking, outcomes and a bulk INSERT scan no level');

UPDATE ctxgraph.tip_retrievals
   SET tip_followed_llm = (id % 2 = 0), tip_followed_emb = 0.5, tip_followed_computed_at = '2026-11-28 00:00+00'
 WHERE skill = 'probes' AND attempt_id IS NOT NULL;
SELECT is(pg_temp.level_seq_scans_since(), 0::bigint, 'a scorer write-back scans no level');

-- A pair is read by its attempt's rows, never by the tip's: here statistics say the tip picks
-- one row and the attempt three hundred, so a plan free to choose would take the (skill, tip_id)
-- index, which on a real log reads every row of the tip for each pair.
CREATE TEMP TABLE wide_attempt AS
SELECT tests.make_attempt('probes', 'probe-run', 'probe-wide', 1, '2026-11-25 00:00+00') AS id;
CREATE TEMP TABLE wide_tips AS
SELECT tests.make_tip('probes', 'probe-wide', 'wide tip ' || n) AS id FROM generate_series(1, 300) AS n;
INSERT INTO ctxgraph.tip_retrievals (skill, run_id, attempt_id, tip_id, rule_id, rank, outcome_value,
                                     outcome_confidence, retrieved_at)
SELECT 'probes', 'probe-run', (SELECT id FROM wide_attempt), t.id, 'probe-wide', 1, 1.0, 1.0, '2026-11-24 23:59+00'
  FROM wide_tips AS t;
SELECT pg_temp.analyze_probe_partitions(ARRAY['ctxgraph.tip_retrievals'::regclass]);
CREATE FUNCTION pg_temp.pair_plan() RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; plan text := '';
BEGIN
    FOR line IN EXECUTE format('EXPLAIN SELECT * FROM ctxgraph._tip_pair_aggregate(%L, %s, %s)', 'probes',
                               (SELECT min(id) FROM wide_tips), (SELECT id FROM wide_attempt)) LOOP
        plan := plan || line || E'\n';
    END LOOP;
    RETURN plan;
END $$;
SELECT unalike(pg_temp.pair_plan(), '%tip_id_idx%', 'a pair is never read through the log''s (skill, tip_id) index');

-- And a statement that touches many pairs of one attempt reads the attempt's rows once for all of
-- them: a new outcome confidence for the wide attempt moves its 300 pairs, which read pair by pair
-- would fetch its 300 rows 300 times.
CREATE FUNCTION pg_temp.log_rows_read() RETURNS bigint LANGUAGE sql AS $$
    SELECT coalesce(sum(coalesce(s.idx_tup_fetch, 0) + coalesce(s.seq_tup_read, 0)), 0)::bigint
      FROM pg_stat_xact_user_tables AS s
     WHERE s.relid IN (SELECT pg_temp.probe_partitions(ARRAY['ctxgraph.tip_retrievals'::regclass]))
$$;
CREATE TEMP TABLE log_reads_before AS SELECT pg_temp.log_rows_read() AS n;
UPDATE ctxgraph.tip_retrievals SET outcome_confidence = 0.9
 WHERE skill = 'probes' AND attempt_id = (SELECT id FROM wide_attempt);
SELECT cmp_ok(pg_temp.log_rows_read() - (SELECT n FROM log_reads_before), '<', 3000::bigint,
              'changing 300 pairs of one attempt reads its rows a few times in all, not once per pair (90,000)');

-- And an outcome's maintenance reads the attempt's own tips, not the skill's every tip: asked per
-- pair whether its tip still exists, the generic plan hashed all of them (at 10M rows, 10,000 tips
-- read for an attempt's five, 3.7 ms of record_outcome's 4.9 ms statement). Planned on statistics
-- that count the skill's 340 tips (autovacuum's state once they are in).
CREATE FUNCTION pg_temp.tip_rows_read() RETURNS bigint LANGUAGE sql AS $$
    SELECT (SELECT coalesce(sum(s.seq_tup_read), 0) FROM pg_stat_xact_user_tables AS s
             WHERE s.relid IN (SELECT pg_temp.probe_partitions(ARRAY['ctxgraph.tips'::regclass])))
         + (SELECT coalesce(sum(pg_catalog.pg_stat_get_xact_tuples_returned(i.indexrelid)), 0)
              FROM pg_catalog.pg_index AS i
             WHERE i.indrelid IN (SELECT pg_temp.probe_partitions(ARRAY['ctxgraph.tips'::regclass])))
$$;
SELECT pg_temp.analyze_probe_partitions(ARRAY['ctxgraph.tips'::regclass]);
CREATE TEMP TABLE five_tip_attempt AS
SELECT tests.make_attempt_with_retrievals('probes', 'probe-run', 'probe-wide', 2,
                                          ARRAY(SELECT t.id FROM wide_tips AS t ORDER BY t.id LIMIT 5), NULL, NULL,
                                          '2026-11-26 00:00+00') AS id;
CREATE TEMP TABLE tip_reads_before AS SELECT pg_temp.tip_rows_read() AS n;
SELECT ctxgraph.record_outcome('probes', (SELECT id FROM five_tip_attempt), true, NULL);
SELECT cmp_ok(pg_temp.tip_rows_read() - (SELECT n FROM tip_reads_before), '<', 100::bigint,
              'the outcome of an attempt of five tips reads its own tips, not the skill''s 340');

-- And the levels still hold what a from-scratch computation gives (tests/fixtures/maintained_references.sql).
SELECT set_eq($$SELECT * FROM tests.maintained_tips WHERE skill = 'probes'$$,
              $$SELECT * FROM tests.reference_tips WHERE skill = 'probes'$$, 'tips = reference');
SELECT set_eq($$SELECT * FROM tests.maintained_pairs WHERE skill = 'probes'$$,
              $$SELECT * FROM tests.reference_pairs WHERE skill = 'probes'$$, 'pairs = reference');
SELECT set_eq('SELECT * FROM tests.maintained_levels', 'SELECT * FROM tests.reference_levels',
              'the tip-rule, tip-run, attempt and rule levels = reference');

SELECT * FROM finish();
ROLLBACK;
