-- Deploy ctxgraph:function_write_checks to pg
-- requires: table_failure_modes
-- requires: table_tips
-- requires: privileges_functions

-- The write path's argument checks, written once. Each helper returns the first problem of its
-- arguments as one row (sqlstate, message, hint), or no row, instead of raising: the per-call
-- functions raise it at once (ctxgraph._raise_problem), and the bulk ingest
-- (ctxgraph.ingest_run_log) evaluates it for every staged line in one statement and raises the
-- problem of the earliest line, naming that line. The helpers are set-returning SQL functions of
-- one SELECT, so the planner inlines them into the bulk statement instead of calling them per line.
-- Each finds its first failing check with one CASE over the checks in order (computed once, behind
-- OFFSET 0) and builds only that check's message: a table of every check, each with its message,
-- sorted and cut to one row per line, cost 20 us a retrieval line (0.2 s of a 50,000-retrieval
-- bulk load) where the CASE costs 3 us. A check that cannot be asked of some arguments (array_position
-- of a multi-dimensional array) comes after the check that refuses them, which CASE evaluates first.
-- Messages, SQLSTATEs and their order are those the per-call functions raised before.
BEGIN;

-- The one rule for an id the write path is given (run_id, rule_id), held by the functions and, for
-- a plain INSERT, by the tables' own checks (constraint_id_rule): 1 to 200 characters, and two ids
-- that print alike are the same id. So an id has none of:
--   * whitespace or control characters, ASCII or not (tab, newline, no-break space, the Unicode
--     spaces, U+0085, U+1680, U+3000);
--   * invisible characters: every format character (general category Cf: the soft hyphen U+00AD,
--     zero-width and bidirectional marks U+200B-U+200F, U+202A-U+202E, U+2060-U+206F, the
--     byte-order mark U+FEFF, the Arabic, Syriac and Kaithi number signs, the tag characters
--     U+E0000-U+E007F, ...), the variation selectors (U+FE00-U+FE0F, U+E0100-U+E01EF), the
--     Mongolian free variation selectors U+180B-U+180F, the combining grapheme joiner U+034F, the
--     Hangul fillers (U+115F, U+1160, U+3164, U+FFA0), the braille blank U+2800, the Khmer inherent
--     vowels U+17B4, U+17B5, the other default-ignorable code points (U+FFF0-U+FFF8, U+16FE4,
--     U+1D159, U+E0000-U+E0FFF) and the noncharacters U+FFFE, U+FFFF, which print as nothing;
--   * a character NFKC changes: an id must be in NFKC form, so a full-width letter, a ligature or a
--     superscript, which print like their plain forms, is refused rather than folded;
--   * Latin letters beside Greek or Cyrillic ones (their blocks, and the Greek and Cyrillic small
--     capitals and modifier letters of the phonetic extensions): a mixed-script id such as "аdmin"
--     (its first letter Cyrillic) prints like an all-Latin one. An id wholly in one script is fine,
--     and so is one of digits and punctuation with a single Greek or Cyrillic letter: telling that
--     from a Latin look-alike needs the confusables table below.
-- Confusables within one script, or across scripts other than these three, are not folded: that
-- needs Unicode's confusables table, which PostgreSQL does not carry. 200 characters keep every
-- index entry far below PostgreSQL's limit on one (a longer id would fail there with 54000, deep
-- inside the insert). Returns the problem's message, or NULL.
-- The characters an id may not hold (whitespace, control and invisible ones, as listed above) and
-- the Greek and Cyrillic letters that may not stand beside Latin ones, as regular-expression
-- classes. Constant functions, so the rule names each set once and the planner folds them in.
CREATE FUNCTION ctxgraph._id_forbidden_characters()
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$ SELECT '[[:space:][:cntrl:]\u0085\u00a0\u00ad\u034f\u061c\u115f\u1160\u1680\u17b4\u17b5\u180b-\u180f\u2000-\u200f\u2028-\u202f\u205f-\u206f\u2800\u3000\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\ufffe\uffff\u0600-\u0605\u06dd\u070f\U000110bd\U000110cd\U00016fe4\U0001bca0-\U0001bca3\U0001d159\U0001d173-\U0001d17a\U000e0000-\U000e0fff]'::text $$;

CREATE FUNCTION ctxgraph._id_lookalike_letters()
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$ SELECT '[\u0370-\u03ff\u1d26-\u1d2b\u1d5d-\u1d61\u1d66-\u1d6a\u1dbf\u1f00-\u1fff\u0400-\u052f\u1c80-\u1c8f\u2de0-\u2dff\ua640-\ua69f]'::text $$;

-- 'U+XXXX at character N' for the first character of id that matches pattern: named by code
-- point and position, since the character itself would not show.
CREATE FUNCTION ctxgraph._code_point_at(id text, pattern text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT 'U+' || upper(lpad(to_hex(ascii(substring(_code_point_at.id FROM _code_point_at.pattern))),
                              greatest(4, length(to_hex(ascii(substring(_code_point_at.id FROM _code_point_at.pattern))))),
                              '0'))
           || ' at character ' || strpos(_code_point_at.id, substring(_code_point_at.id FROM _code_point_at.pattern))::text
$$;

CREATE FUNCTION ctxgraph._id_problem(what text, id text)
RETURNS text
LANGUAGE sql IMMUTABLE
-- Immutable expressions only (|| and ::text rather than the stable format() and text || integer,
-- no subquery), so the planner inlines it into the bulk ingest's one statement: called as a
-- function instead, it made the checks of every staged line cost 14 times as much.
AS $$
    SELECT CASE
        WHEN length(_id_problem.id) > 200
            THEN 'ctxgraph: ' || _id_problem.what || ' must be at most 200 characters, got ' || length(_id_problem.id)::text
        WHEN _id_problem.id ~ ctxgraph._id_forbidden_characters()
            THEN 'ctxgraph: ' || _id_problem.what || ' must not contain whitespace, control or invisible characters, got '
                 || ctxgraph._code_point_at(_id_problem.id, ctxgraph._id_forbidden_characters())
        WHEN _id_problem.id IS NOT NFKC NORMALIZED
            THEN 'ctxgraph: ' || _id_problem.what || ' must be in Unicode NFKC form (it prints like '
                 || normalize(_id_problem.id, NFKC) || ')'
        WHEN _id_problem.id ~ '[A-Za-z]' AND _id_problem.id ~ ctxgraph._id_lookalike_letters()
            THEN 'ctxgraph: ' || _id_problem.what || ' must not mix Latin letters with Greek or Cyrillic ones (look-alikes), got '
                 || ctxgraph._code_point_at(_id_problem.id, ctxgraph._id_lookalike_letters())
    END
$$;

COMMENT ON FUNCTION ctxgraph._id_forbidden_characters() IS
    'Private: the characters an id may not hold (whitespace, control, format characters, variation selectors, fillers), as a regular-expression class.';
COMMENT ON FUNCTION ctxgraph._id_lookalike_letters() IS
    'Private: the Greek and Cyrillic letters an id may not hold beside Latin ones, as a regular-expression class.';
COMMENT ON FUNCTION ctxgraph._code_point_at(text, text) IS
    'Private: ''U+XXXX at character N'' for the first character of a text that matches a pattern.';
COMMENT ON FUNCTION ctxgraph._id_problem(text, text) IS
    'Private: why an id of the write path breaks the id rule (at most 200 characters; no whitespace, control or invisible character; NFKC form; no Latin beside Greek or Cyrillic letters), or NULL.';

-- log_retrievals' checks of one batch, before the tip lookup (ctxgraph._missing_tips).
CREATE FUNCTION ctxgraph._retrieval_batch_problem(
    run_id            text,
    rule_id           text,
    tip_ids           bigint[],
    similarity_scores double precision[],
    retrieved_at      timestamptz
)
RETURNS TABLE (sqlstate text, message text, hint text)
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN k.failed IN (1, 7) THEN '22004' ELSE '22023' END,
           CASE k.failed
               WHEN 1 THEN 'ctxgraph: log_retrievals needs run_id, rule_id, tip_ids, similarity_scores and retrieved_at'
               WHEN 2 THEN 'ctxgraph: run_id and rule_id must not be empty'
               WHEN 3 THEN ctxgraph._id_problem('run_id', _retrieval_batch_problem.run_id)
               WHEN 4 THEN ctxgraph._id_problem('rule_id', _retrieval_batch_problem.rule_id)
               WHEN 5 THEN 'ctxgraph: tip_ids and similarity_scores must be one-dimensional arrays'
               WHEN 6 THEN format('ctxgraph: %s tip ids but %s similarity scores', cardinality(_retrieval_batch_problem.tip_ids),
                                  cardinality(_retrieval_batch_problem.similarity_scores))
               WHEN 7 THEN 'ctxgraph: tip_ids must not contain NULL'
               WHEN 8 THEN 'ctxgraph: similarity_scores must not contain NaN'
               WHEN 9 THEN format('ctxgraph: similarity_scores must be cosines between -1 and 1, got %s',
                                  (SELECT s FROM unnest(_retrieval_batch_problem.similarity_scores) AS s
                                    WHERE s < -1 OR s > 1 LIMIT 1))
               WHEN 10 THEN 'ctxgraph: a tip appears twice in one retrieval batch'
               WHEN 11 THEN 'ctxgraph: retrieved_at must be a finite instant, got ' || _retrieval_batch_problem.retrieved_at::text
           END,
           CASE k.failed
               WHEN 6 THEN 'similarity_scores[i] is the score of tip_ids[i]; pass NULL elements for unknown scores.'
               WHEN 9 THEN 'a similarity score is the cosine of the query''s and the tip''s embeddings; pass NULL for an unknown one.'
           END
      FROM (SELECT CASE
                WHEN _retrieval_batch_problem.run_id IS NULL OR _retrieval_batch_problem.rule_id IS NULL
                     OR _retrieval_batch_problem.tip_ids IS NULL OR _retrieval_batch_problem.similarity_scores IS NULL
                     OR _retrieval_batch_problem.retrieved_at IS NULL THEN 1
                WHEN btrim(_retrieval_batch_problem.run_id) = '' OR btrim(_retrieval_batch_problem.rule_id) = '' THEN 2
                WHEN ctxgraph._id_problem('run_id', _retrieval_batch_problem.run_id) IS NOT NULL THEN 3
                WHEN ctxgraph._id_problem('rule_id', _retrieval_batch_problem.rule_id) IS NOT NULL THEN 4
                -- infinity is no instant: a retrieval at +infinity sorts after every fit's as_of
                -- for ever (the table's retrievals_finite_instant holds plain INSERTs to it too).
                WHEN NOT isfinite(_retrieval_batch_problem.retrieved_at) THEN 11
                WHEN coalesce(array_ndims(_retrieval_batch_problem.tip_ids), 1) <> 1
                     OR coalesce(array_ndims(_retrieval_batch_problem.similarity_scores), 1) <> 1 THEN 5
                WHEN cardinality(_retrieval_batch_problem.tip_ids) <> cardinality(_retrieval_batch_problem.similarity_scores) THEN 6
                -- array_position refuses arrays of more dimensions: only asked of the ones check 5 lets pass.
                WHEN array_position(_retrieval_batch_problem.tip_ids, NULL) IS NOT NULL THEN 7
                WHEN array_position(_retrieval_batch_problem.similarity_scores, 'NaN'::double precision) IS NOT NULL THEN 8
                -- A similarity is a cosine: finite and within [-1, 1]. NaN, which sorts above every
                -- number, was refused just above with its own message.
                WHEN EXISTS (SELECT 1 FROM unnest(_retrieval_batch_problem.similarity_scores) AS s WHERE s < -1 OR s > 1) THEN 9
                WHEN cardinality(_retrieval_batch_problem.tip_ids)
                     <> (SELECT count(DISTINCT t) FROM unnest(_retrieval_batch_problem.tip_ids) AS t) THEN 10
            END
            OFFSET 0) AS k (failed)
     WHERE k.failed IS NOT NULL
$$;

COMMENT ON FUNCTION ctxgraph._retrieval_batch_problem(text, text, bigint[], double precision[], timestamptz) IS
    'Private: the first problem of one retrieval batch''s arguments (log_retrievals'' checks), or no row.';

-- The tips of a batch the skill does not have (log_retrievals raises 23503 for them), by primary key.
CREATE FUNCTION ctxgraph._missing_tips(skill text, tip_ids bigint[])
RETURNS SETOF bigint
LANGUAGE sql STABLE
AS $$
    SELECT t FROM unnest(_missing_tips.tip_ids) AS t
     WHERE NOT EXISTS (SELECT 1 FROM ctxgraph.tips AS tip WHERE tip.skill = _missing_tips.skill AND tip.id = t)
$$;

COMMENT ON FUNCTION ctxgraph._missing_tips(text, bigint[]) IS
    'Private: the ids of a batch that are not tips of the skill (log_retrievals and ingest_run_log raise 23503 for them).';

-- save_attempt's checks of its arguments (the 23505 of an attempt saved twice needs the table).
CREATE FUNCTION ctxgraph._attempt_problem(
    run_id         text,
    rule_id        text,
    attempt_number integer,
    started_at     timestamptz,
    ended_at       timestamptz
)
RETURNS TABLE (sqlstate text, message text, hint text)
LANGUAGE sql STABLE
AS $$
    SELECT CASE WHEN k.failed = 1 THEN '22004' ELSE '22023' END,
           CASE k.failed
               WHEN 1 THEN 'ctxgraph: save_attempt needs run_id, rule_id and attempt_number'
               WHEN 2 THEN 'ctxgraph: run_id and rule_id must not be empty'
               WHEN 3 THEN ctxgraph._id_problem('run_id', _attempt_problem.run_id)
               WHEN 4 THEN ctxgraph._id_problem('rule_id', _attempt_problem.rule_id)
               WHEN 5 THEN format('ctxgraph: attempt_number must be 1 or more, got %s', _attempt_problem.attempt_number)
               WHEN 6 THEN format('ctxgraph: attempt ends (%s) before it starts (%s)', _attempt_problem.ended_at,
                                  _attempt_problem.started_at)
               WHEN 7 THEN format('ctxgraph: started_at and ended_at must be finite instants, got %s and %s',
                                  coalesce(_attempt_problem.started_at::text, 'NULL'),
                                  coalesce(_attempt_problem.ended_at::text, 'NULL'))
           END,
           NULL::text
      FROM (SELECT CASE
                WHEN _attempt_problem.run_id IS NULL OR _attempt_problem.rule_id IS NULL
                     OR _attempt_problem.attempt_number IS NULL THEN 1
                WHEN btrim(_attempt_problem.run_id) = '' OR btrim(_attempt_problem.rule_id) = '' THEN 2
                WHEN ctxgraph._id_problem('run_id', _attempt_problem.run_id) IS NOT NULL THEN 3
                WHEN ctxgraph._id_problem('rule_id', _attempt_problem.rule_id) IS NOT NULL THEN 4
                WHEN _attempt_problem.attempt_number < 1 THEN 5
                WHEN NOT isfinite(_attempt_problem.started_at) OR NOT isfinite(_attempt_problem.ended_at) THEN 7
                WHEN _attempt_problem.ended_at < _attempt_problem.started_at THEN 6
            END
            OFFSET 0) AS k (failed)
     WHERE k.failed IS NOT NULL
$$;

COMMENT ON FUNCTION ctxgraph._attempt_problem(text, text, integer, timestamptz, timestamptz) IS
    'Private: the first problem of save_attempt''s arguments, or no row.';

-- graded_outcome's checks of a result, for a skill whose grading the caller has already looked up
-- (ctxgraph._require_skill raises for an unknown one).
CREATE FUNCTION ctxgraph._outcome_problem(
    skill          text,
    grading        text,
    passed         boolean,
    attempt_number integer,
    failure_mode   text
)
RETURNS TABLE (sqlstate text, message text, hint text)
LANGUAGE sql STABLE
AS $$
    SELECT CASE WHEN k.failed IN (1, 2) THEN '22004' ELSE '22023' END,
           CASE k.failed
               WHEN 1 THEN 'ctxgraph: passed must not be NULL'
               WHEN 2 THEN 'ctxgraph: attempt_number must not be NULL'
               WHEN 3 THEN format('ctxgraph: attempt_number must be 1 or more, got %s', _outcome_problem.attempt_number)
               WHEN 4 THEN format('ctxgraph: unknown failure mode %s', quote_literal(_outcome_problem.failure_mode))
               WHEN 5 THEN format('ctxgraph: a passed attempt has no failure mode, got %s',
                                  quote_literal(_outcome_problem.failure_mode))
               WHEN 6 THEN format('ctxgraph: a failed attempt of graded skill %s needs a failure mode',
                                  quote_literal(_outcome_problem.skill))
           END,
           -- The list of known modes is read only for the problem returned.
           CASE WHEN k.failed IN (4, 6)
                THEN 'known failure modes: ' || (SELECT string_agg(fm.name, ', ' ORDER BY fm.name) FROM ctxgraph.failure_modes AS fm)
           END
      FROM (SELECT CASE
                WHEN _outcome_problem.passed IS NULL THEN 1
                WHEN _outcome_problem.attempt_number IS NULL THEN 2
                WHEN _outcome_problem.attempt_number < 1 THEN 3
                WHEN _outcome_problem.failure_mode IS NOT NULL
                     AND NOT EXISTS (SELECT 1 FROM ctxgraph.failure_modes AS fm WHERE fm.name = _outcome_problem.failure_mode)
                     THEN 4
                WHEN _outcome_problem.failure_mode IS NOT NULL AND _outcome_problem.passed THEN 5
                WHEN _outcome_problem.grading <> 'binary' AND NOT _outcome_problem.passed
                     AND _outcome_problem.failure_mode IS NULL THEN 6
            END
            OFFSET 0) AS k (failed)
     WHERE k.failed IS NOT NULL
$$;

COMMENT ON FUNCTION ctxgraph._outcome_problem(text, text, boolean, integer, text) IS
    'Private: the first problem of a result (graded_outcome''s checks) for a skill of the given grading, or no row.';

-- Raise a problem, naming the run-log line it came from when there is one.
CREATE FUNCTION ctxgraph._raise_problem(sqlstate text, message text, hint text, line bigint DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    text_out text := CASE WHEN _raise_problem.line IS NULL THEN _raise_problem.message
                          ELSE format('ctxgraph: run log line %s: %s', _raise_problem.line,
                                      regexp_replace(_raise_problem.message, '^ctxgraph: ', '')) END;
BEGIN
    IF _raise_problem.hint IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = _raise_problem.sqlstate, MESSAGE = text_out;
    END IF;
    RAISE EXCEPTION USING ERRCODE = _raise_problem.sqlstate, MESSAGE = text_out, HINT = _raise_problem.hint;
END
$$;

COMMENT ON FUNCTION ctxgraph._raise_problem(text, text, text, bigint) IS
    'Private: raises a problem a check helper returned, with its SQLSTATE and hint; with a line, the message names the run-log line.';

REVOKE ALL ON FUNCTION ctxgraph._id_forbidden_characters(), ctxgraph._id_lookalike_letters(), ctxgraph._code_point_at(text, text),
    ctxgraph._id_problem(text, text),
    ctxgraph._retrieval_batch_problem(text, text, bigint[], double precision[], timestamptz),
    ctxgraph._missing_tips(text, bigint[]),
    ctxgraph._attempt_problem(text, text, integer, timestamptz, timestamptz),
    ctxgraph._outcome_problem(text, text, boolean, integer, text),
    ctxgraph._raise_problem(text, text, text, bigint) FROM PUBLIC;
-- The write path runs with the caller's rights, so the writer executes the helpers it calls;
-- graded_outcome calls _outcome_problem and _raise_problem for every role that may run it.
GRANT EXECUTE ON FUNCTION ctxgraph._id_forbidden_characters(), ctxgraph._id_lookalike_letters(), ctxgraph._code_point_at(text, text),
    ctxgraph._id_problem(text, text),
    ctxgraph._retrieval_batch_problem(text, text, bigint[], double precision[], timestamptz),
    ctxgraph._missing_tips(text, bigint[]),
    ctxgraph._attempt_problem(text, text, integer, timestamptz, timestamptz) TO ctxgraph_writer;
GRANT EXECUTE ON FUNCTION ctxgraph._outcome_problem(text, text, boolean, integer, text),
    ctxgraph._raise_problem(text, text, text, bigint)
    TO ctxgraph_writer, ctxgraph_scorer, ctxgraph_ranker, ctxgraph_analyst;

COMMIT;
