-- bench/generate.sql: a deterministic, realistic retrieval log for the stig skill, written straight
-- into the tables (runs, tips, attempts, tip_retrievals) with a few large INSERT ... SELECT.
--
-- psql variables (scripts/bench.sh sets them):
--   seed           setseed() argument, e.g. 0.4242
--   runs           number of runs (160 with the defaults: see docs/ranker-plan.md, "The data")
--   rules          number of rules (500)
--   tips_per_rule  tips learned on each rule (20, so 10,000 tips)
--   replica        'on' loads the log with session_replication_role = replica (no triggers, no FK
--                  checks) and rebuilds tip_stats once at the end; 'off' lets the statement triggers
--                  refresh tip_stats after every INSERT
--
-- Determinism: one session, setseed() first, no parallel workers, and every random() drawn while
-- scanning generate_series or a temp table in its insertion order, so a rerun with the same seed
-- writes the same rows (bench.sh prints a checksum of the log to show it).
--
-- The shape of the log:
--   * each run tries every rule; a rule takes 1 to 4 attempts (uniform); earlier attempts fail, the
--     last passes with probability 0.8; failures are clean_failure 75%, evaluator_gap 15%,
--     health_failure 10%; outcomes are ctxgraph.graded_outcome's, so DEF-26 holds;
--   * each attempt's prompt carries 5 distinct tips: ranks 1-4 from the rule's own 20 tips with a
--     skew toward a few popular ones, rank 5 from another rule 15% of the time;
--   * 1% of attempts never get their retrievals linked (attempt_id and outcome stay NULL);
--   * the last run is in progress: its last 40% of rules have no recorded result yet;
--   * DEF-27: the earliest ~30% of runs predate DEF-27 and the last run awaits its scoring pass,
--     so their follow columns are NULL (~30% of rows); every other row is scored: the judge answers
--     80% of the time (10% of its answers disagree with the latent truth), the cosine is present 97%
--     of the time and is higher when the tip was followed.
\set ON_ERROR_STOP on
\timing off
SET client_min_messages = warning;
SET max_parallel_workers_per_gather = 0;
SET work_mem = '64MB';
SELECT setseed(:seed) \gset seed_

-- Load timings, read back by bench/measure.py for the summary.
CREATE TABLE public.bench_load (n serial, step text NOT NULL, rows bigint, seconds double precision);
SELECT clock_timestamp() AS t0 \gset

-- Runs: spread over 320 days from January 2026 whatever their number (160 runs: one every two days;
-- 1,600: one every 4.8 hours), so the log always ends before today and eviction, the effects and the
-- audit as of now() read the maintained levels, as they do in production; ids padded to the run
-- count's width.
INSERT INTO stig.runs (id, started_at, ended_at)
SELECT format('bench-run-%s', lpad(i::text, greatest(3, length(:'runs')), '0')), s, s + interval '20 hours'
  FROM generate_series(1, :runs) AS i,
       LATERAL (SELECT timestamptz '2026-01-05 06:00:00+00' + (i - 1) * (interval '320 days' / :runs) AS s) AS t;

-- Tips: tips_per_rule per rule, ids 1..rules*tips_per_rule, each with a 384-dim embedding so the
-- heap rows have their real width (~1.6 kB) and the ranker's heap fetches are honest.
INSERT INTO stig.tips (id, rule_id, body, embedding, created_at)
SELECT (r - 1) * :tips_per_rule + k,
       format('SV-%s', 200000 + r),
       format('Tip %s for rule SV-%s: check the setting in its drop-in file first, then reload the '
              'service rather than restarting it, and verify with the same command the evaluator runs.',
              k, 200000 + r),
       (SELECT array_agg(random() - 0.5 + 0 * k * d) FROM generate_series(1, 384) AS d)::vector(384),
       timestamptz '2025-12-01 00:00:00+00'
  FROM generate_series(1, :rules) AS r, generate_series(1, :tips_per_rule) AS k;
SELECT setval('ctxgraph.tips_id_seq', (SELECT max(id) FROM ctxgraph.tips));

-- Attempts, staged with every per-attempt random draw, then copied into stig.attempts.
CREATE TEMP TABLE gen_rule_runs AS
SELECT i AS run_no, r AS rule_no,
       1 + floor(random() * 4)::integer AS n_attempts,
       random() < 0.8 AS last_passes
  FROM generate_series(1, :runs) AS i, generate_series(1, :rules) AS r;

CREATE TEMP TABLE gen_attempts AS
SELECT row_number() OVER (ORDER BY rr.run_no, rr.rule_no, n)::bigint AS id,
       rr.run_no, rr.rule_no, n AS attempt_number,
       format('bench-run-%s', lpad(rr.run_no::text, greatest(3, length(:'runs')), '0')) AS run_id,
       format('SV-%s', 200000 + rr.rule_no) AS rule_id,
       CASE WHEN rr.run_no = :runs AND rr.rule_no > 0.6 * :rules AND n = rr.n_attempts THEN NULL
            ELSE n = rr.n_attempts AND rr.last_passes END AS passed,
       random() AS u_mode,
       floor(:tips_per_rule * random() ^ 2)::integer AS tip_base,
       CASE WHEN random() < 0.15 THEN 1 + floor(random() * :rules)::integer END AS other_rule,
       random() < 0.01 AS unlinked,
       timestamptz '2026-01-05 06:00:00+00' + (rr.run_no - 1) * (interval '320 days' / :runs)
           + (rr.rule_no - 1) * (interval '20 hours' / :rules) + (n - 1) * interval '35 seconds' AS started_at
  FROM gen_rule_runs AS rr, generate_series(1, rr.n_attempts) AS n;

ALTER TABLE gen_attempts ADD COLUMN failure_mode text, ADD COLUMN outcome double precision;
UPDATE gen_attempts
   SET failure_mode = CASE WHEN passed IS NOT FALSE THEN NULL
                           WHEN u_mode < 0.75 THEN 'clean_failure'
                           WHEN u_mode < 0.90 THEN 'evaluator_gap'
                           ELSE 'health_failure' END;
UPDATE gen_attempts
   SET outcome = ctxgraph.graded_outcome('stig', passed, attempt_number, failure_mode)
 WHERE passed IS NOT NULL;
-- A cross-rule tip must not be one of the rule's own.
UPDATE gen_attempts SET other_rule = NULL WHERE other_rule = rule_no;

INSERT INTO stig.attempts (id, run_id, rule_id, attempt_number, passed, failure_mode, approach, started_at, ended_at)
SELECT id, run_id, rule_id, attempt_number, passed, failure_mode,
       format('attempt %s at %s', attempt_number, rule_id), started_at, started_at + interval '30 seconds'
  FROM gen_attempts ORDER BY id;
SELECT setval('ctxgraph.attempts_id_seq', (SELECT max(id) FROM ctxgraph.attempts));

CREATE INDEX ON gen_attempts (run_no);
ANALYZE gen_attempts;
INSERT INTO public.bench_load (step, rows, seconds)
SELECT 'runs, tips, attempts', (SELECT count(*) FROM gen_attempts),
       extract(epoch FROM clock_timestamp() - :'t0'::timestamptz);

-- The log, in four statements of consecutive runs (~250,000 rows each). Unless in replica mode,
-- each statement's trigger refreshes the stats of every tip the statement touched.
SELECT CASE WHEN :'replica' = 'on' THEN 'replica' ELSE 'origin' END AS replication_role,
       ceil(:runs / 4.0)::integer AS runs_per_chunk,
       :runs - round(0.7 * :runs)::integer AS last_unscored_run \gset
SET session_replication_role = :replication_role;

\set chunk 1
\ir load_chunk.sql
\set chunk 2
\ir load_chunk.sql
\set chunk 3
\ir load_chunk.sql
\set chunk 4
\ir load_chunk.sql

SET session_replication_role = origin;

-- What autovacuum would do after a bulk load: statistics and the visibility map. Before the
-- rebuild below: planned on a log without statistics (autovacuum had not yet analysed it), the
-- rebuild of a 1M-row log ran for more than 20 minutes instead of under 2.
SELECT clock_timestamp() AS t0 \gset
VACUUM (ANALYZE) stig.runs, stig.tips, stig.attempts, stig.tip_retrievals;
INSERT INTO public.bench_load (step, rows, seconds)
SELECT 'VACUUM (ANALYZE)', NULL, extract(epoch FROM clock_timestamp() - :'t0'::timestamptz);

-- Replica mode skipped the triggers: build tip_stats once, from the whole log.
SELECT :'replica' = 'on' AS replica_on \gset
\if :replica_on
SELECT clock_timestamp() AS t0 \gset
SELECT ctxgraph.refresh_tip_stats('stig') AS refreshed \gset
INSERT INTO public.bench_load (step, rows, seconds)
SELECT 'tip_stats rebuilt once (replica load)', :refreshed, extract(epoch FROM clock_timestamp() - :'t0'::timestamptz);
\endif
ANALYZE stig.tip_stats, stig.tip_attempt_stats, stig.tip_rule_stats, stig.tip_run_stats, stig.rule_attempt_stats,
        stig.rule_stats;

-- A fingerprint of the generated rows (ids included), to show that a rerun writes the same log.
SELECT left(md5(sum(hashtextextended(r::text, 0))::text), 16) AS fingerprint
  FROM stig.tip_retrievals AS r \gset
INSERT INTO public.bench_load (step, rows, seconds) VALUES ('fingerprint ' || :'fingerprint', NULL, NULL);
