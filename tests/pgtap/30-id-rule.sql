-- The id rule, held by the functions and the tables alike. Through the functions the soft hyphen
-- (U+00AD), a tag character (U+E0041), the Hangul filler (U+3164) and a Cyrillic look-alike in
-- "аdmin" passed; a writer's plain INSERT stored an id with U+202E or of 5,000 characters. Now
-- every format character, variation selector and filler is invisible and refused, an id must be in
-- NFKC form, Latin letters may not stand beside Greek or Cyrillic ones, and the tables' checks
-- call the same ctxgraph._id_problem. An id wholly in another script is an id.
BEGIN;
SELECT plan(15);

SELECT tests.make_tip('stig', 'V-1', 'A: set PASS_MAX_DAYS 60') AS tip_a \gset

-- ---------------------------------------------------------------------------------------------
-- The functions refuse what prints like another id (8)
-- ---------------------------------------------------------------------------------------------
SELECT throws_ok(format($$SELECT ctxgraph.save_attempt('stig', %L, 'V-1', 1)$$, c.id), '22023', c.message,
                 format('save_attempt: %s in run_id raises 22023', c.what))
  FROM (VALUES (1, 'a soft hyphen (U+00AD)', 'run' || chr(173) || '1',
                'ctxgraph: run_id must not contain whitespace, control or invisible characters, got U+00AD at character 4'),
               (2, 'a tag character (U+E0041)', 'run' || chr(917569) || '1',
                'ctxgraph: run_id must not contain whitespace, control or invisible characters, got U+E0041 at character 4'),
               (3, 'the Hangul filler (U+3164)', 'run' || chr(12644),
                'ctxgraph: run_id must not contain whitespace, control or invisible characters, got U+3164 at character 4'),
               (4, 'a Cyrillic a among Latin letters', chr(1072) || 'dmin',
                'ctxgraph: run_id must not mix Latin letters with Greek or Cyrillic ones (look-alikes), got U+0430 at character 1'),
               (5, 'full-width letters', chr(65313) || chr(65314),
                'ctxgraph: run_id must be in Unicode NFKC form (it prints like AB)'),
               (6, 'a Mongolian free variation selector (U+180B)', 'run' || chr(6155),
                'ctxgraph: run_id must not contain whitespace, control or invisible characters, got U+180B at character 4'),
               (7, 'the braille blank (U+2800)', 'run' || chr(10240),
                'ctxgraph: run_id must not contain whitespace, control or invisible characters, got U+2800 at character 4'),
               (8, 'a Greek small capital among Latin letters', chr(7462) || 'amma',
                'ctxgraph: run_id must not mix Latin letters with Greek or Cyrillic ones (look-alikes), got U+1D26 at character 1'))
       AS c (n, what, id, message)
 ORDER BY c.n;

-- ---------------------------------------------------------------------------------------------
-- The tables refuse a writer's plain statement the same way (4)
-- ---------------------------------------------------------------------------------------------
SET LOCAL ROLE ctxgraph_writer;
SELECT throws_ok(format($$INSERT INTO stig.runs (id) VALUES (%L)$$, 'run' || chr(8238) || 'evil'), '23514', NULL,
                 'writer: a plain INSERT of a run id with U+202E is refused (23514)');
SELECT throws_ok(format($$INSERT INTO stig.runs (id) VALUES (%L)$$, repeat('r', 5000)), '23514', NULL,
                 'writer: a plain INSERT of a run id of 5,000 characters is refused (23514)');
SELECT throws_ok(format($$INSERT INTO stig.tips (rule_id, body) VALUES (%L, 'B')$$, chr(1072) || 'dmin'), '23514', NULL,
                 'writer: a plain INSERT of a tip whose rule id mixes scripts is refused (23514)');
SELECT throws_ok(format($$INSERT INTO stig.tip_retrievals (run_id, tip_id, rule_id, rank, retrieved_at)
                          VALUES ('run-1', %s, %L, 1, '2026-11-29 12:00+00')$$, :tip_a, 'V' || chr(173) || '1'),
                 '23514', NULL, 'writer: a plain INSERT of a retrieval whose rule id has a soft hyphen is refused (23514)');

-- ---------------------------------------------------------------------------------------------
-- Ids wholly in one script are ids; one definition of the rule (3)
-- ---------------------------------------------------------------------------------------------
SELECT lives_ok(format($$INSERT INTO stig.runs (id) VALUES (%L), (%L), (%L)$$,
                       chr(1072) || chr(1076) || chr(1084) || chr(1080) || chr(1085), chr(937) || '-1', 'na' || chr(239) || 've'),
                'writer: ids wholly Cyrillic, Greek with digits, or Latin with a diacritic are stored');
RESET ROLE;
SELECT lives_ok($$SELECT ctxgraph.save_attempt('stig', 'run-2', 'CVE-2024-1234', 1)$$, 'an ordinary id passes the functions');
SELECT is((SELECT count(*) FROM pg_catalog.pg_constraint
            WHERE conname IN ('runs_id_rule', 'attempts_id_rule', 'tips_id_rule', 'retrievals_id_rule')
              AND conrelid IN ('ctxgraph.runs'::regclass, 'ctxgraph.attempts'::regclass, 'ctxgraph.tips'::regclass,
                               'ctxgraph.tip_retrievals'::regclass)
              AND pg_get_constraintdef(oid) ~ '_id_problem'),
          4::bigint, 'the four tables'' checks call ctxgraph._id_problem, the functions'' own rule');

SELECT * FROM finish();
ROLLBACK;
