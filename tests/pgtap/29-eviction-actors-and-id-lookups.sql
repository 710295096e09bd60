-- Two findings of a red-team pass. (1) tip_evictions kept only the as_of instants a caller gave:
-- evict_tips(..., now() + 1 year, false) retires now and recorded next year for the retirement and
-- its restore, and nothing said who acted. Each row now also holds the session's login role and the
-- server's clock, for the retirement and for the restore; a reason that no judge verdict backs
-- says so in tip_evidence. (2) A lookup by id alone on a skill's own
-- table (stig.tip_retrievals WHERE id = ANY (...)) read the whole log: the keys lead with skill.
-- Every partition of runs, attempts, tips and tip_retrievals now has an index that leads with id,
-- a skill added later included.
--
-- Eviction decides on the stored fit and never fits itself (ctxgraph.fit does, in Python), so each
-- scenario first stores, with tests.write_fit at the instant it asks about, the fit that blames
-- the tips the attribution fit blames there: Ha, then Ha and Hs (misleading probability 1.00).
BEGIN;
SELECT plan(15);

SELECT tests.make_tip('stig', 'R-h', 'Ha: chmod 000 /etc/shadow', '2026-10-01 00:00+00') AS ha \gset
SELECT count(tests.make_attempt_with_retrievals('stig', 'run-h' || i, 'R-h', 1, ARRAY[:ha]::bigint[], false,
                                                'health_failure')) AS attempts
  FROM generate_series(1, 3) AS i \gset
UPDATE stig.tip_retrievals SET tip_followed_llm = true, tip_followed_computed_at = now() WHERE tip_id = :ha;
SELECT tests.write_fit('stig', now() + interval '1 year', ARRAY[:ha]::bigint[], blamed_probability => 1.0) AS fitted \gset
SELECT clock_timestamp() AS before_eviction \gset

-- ---------------------------------------------------------------------------------------------
-- Who retired and restored a tip, and when that really was (7)
-- ---------------------------------------------------------------------------------------------
SET LOCAL ROLE ctxgraph_writer;
SELECT is((SELECT count(*) FROM ctxgraph.evict_tips('stig', now() + interval '1 year', false) AS e
            WHERE e.tip_id = :ha AND e.retired), 1::bigint,
          'the writer retires the harmful tip as of a year ahead');
RESET ROLE;
SELECT is((SELECT retired_at FROM ctxgraph.tip_evictions WHERE tip_id = :ha), now() + interval '1 year',
          'retired_at is the as_of the caller gave');
SELECT is((SELECT retired_by FROM ctxgraph.tip_evictions WHERE tip_id = :ha), session_user::text,
          'retired_by is the session''s login role, not the functions'' owner');
SELECT ok((SELECT retired_logged_at BETWEEN :'before_eviction' AND clock_timestamp() FROM ctxgraph.tip_evictions
            WHERE tip_id = :ha),
          'retired_logged_at is the server''s clock when the row was written, not the as_of');
SET LOCAL ROLE ctxgraph_writer;
SELECT ok(ctxgraph.restore_tip('stig', :ha, now() + interval '1 year'), 'the writer restores it as of a year ahead');
RESET ROLE;
SELECT is((SELECT restored_by || ' ' || restored_at::text FROM ctxgraph.tip_evictions WHERE tip_id = :ha),
          session_user::text || ' ' || (now() + interval '1 year')::text,
          'restored_by is the login role, restored_at the as_of given');
SELECT ok((SELECT restored_logged_at BETWEEN retired_logged_at AND clock_timestamp() FROM ctxgraph.tip_evictions
            WHERE tip_id = :ha),
          'restored_logged_at is the server''s clock when the restore was written');

-- ---------------------------------------------------------------------------------------------
-- A reason no judge verdict backs says so (2)
-- ---------------------------------------------------------------------------------------------
-- Hs breaks the system the same way, its follow decided by the no-judge signal alone.
SELECT tests.make_tip('stig', 'R-s', 'Hs: rm -rf /etc/pam.d', '2026-10-01 00:00+00') AS hs \gset
SELECT count(tests.make_attempt_with_retrievals('stig', 'run-s' || i, 'R-s', 1, ARRAY[:hs]::bigint[], false,
                                                'health_failure')) AS attempts
  FROM generate_series(1, 3) AS i \gset
UPDATE stig.tip_retrievals SET follow_probability = 0.99, tip_followed_computed_at = now() WHERE tip_id = :hs;
-- tip_evidence reads the stored fit: store the fit of this instant (the scoring pass would).
SELECT tests.write_fit('stig', now() + interval '2 years', ARRAY[:ha, :hs]::bigint[], blamed_probability => 1.0) AS fitted \gset
SELECT ok((SELECT e.reason ~ '; no judge verdict on any of its retrievals: followed or not per the no-judge signal alone$'
             FROM ctxgraph.tip_evidence('stig', now() + interval '2 years') AS e WHERE e.tip_id = :hs),
          'tip_evidence: a reason resting on the no-judge signal alone says so');
SELECT ok((SELECT e.reason ~ '^harm: ' AND e.reason !~ 'no judge verdict' FROM ctxgraph.tip_evictions AS e
            WHERE e.tip_id = :ha),
          'a reason the judge''s verdicts back (Ha''s retirement above) does not');

-- ---------------------------------------------------------------------------------------------
-- Lookups by id alone (6)
-- ---------------------------------------------------------------------------------------------
SELECT ctxgraph.add_skill('id29', 'graded') AS added \gset
SELECT is_empty($$SELECT t.inhrelid::regclass::text
                    FROM pg_catalog.pg_inherits AS t
                   WHERE t.inhparent IN ('ctxgraph.runs'::regclass, 'ctxgraph.attempts'::regclass,
                                         'ctxgraph.tips'::regclass, 'ctxgraph.tip_retrievals'::regclass)
                     AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_index AS i
                                       JOIN pg_catalog.pg_attribute AS a
                                         ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                                      WHERE i.indrelid = t.inhrelid AND a.attname = 'id')$$,
                'every skill''s runs, attempts, tips and tip_retrievals, a skill added now included, have an index leading with id');
-- The planner takes it for an id-only lookup on the skill's own table once scans are dear.
SET LOCAL enable_seqscan = off;
SELECT ok(tests.plan_of(format('SELECT * FROM %s WHERE id = ANY (ARRAY[''1'', ''2'']::%s[])', t.tbl, t.id_type))
          ~ '(Index|Index Only|Bitmap Index) Scan (using|on) (runs|attempts|tips|tip_retrievals)_id_idx\M',
          format('%s: a lookup by id alone uses its index on id', t.tbl))
  FROM (VALUES (1, 'stig.tip_retrievals', 'bigint'), (2, 'stig.tips', 'bigint'), (3, 'stig.attempts', 'bigint'),
               (4, 'stig.runs', 'text'), (5, 'id29.tip_retrievals', 'bigint')) AS t (n, tbl, id_type)
 ORDER BY t.n;
RESET enable_seqscan;

SELECT * FROM finish();
ROLLBACK;
