"""Tolerant reader for the agent's JSONL run log, and an index from retrievals to fix scripts.

The agent writes one JSON object per line. Attempt lines carry the Worker's whole fix script::

    {"type": "attempt", "run_id": "run-7", "rule_id": "harden_x", "attempt_number": 1,
     "attempt_id": 123, "started_at": "2026-05-01T10:00:00Z", "ended_at": "2026-05-01T10:02:00Z",
     "fix_script": "#!/bin/bash\\n...", "result": {"passed": false, "failure_mode": "clean_failure"}}

``attempt_id``, the timestamps and ``result`` are optional; extra keys are ignored. Lines of any other
``type`` (``run_start``, ``retrieval``, ...) are skipped and counted. A malformed line never stops the
read: it is recorded as a :class:`Problem` and skipped, so one bad line costs one attempt, not the run.

This module is a leaf: it reads files and builds in-memory indexes, it never speaks SQL and imports
no other ctxgraph module but ``jsontext`` (a leaf too). It never truncates a script.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from os import PathLike
from typing import Any, Protocol

from ctxgraph import jsontext

__all__ = [
    "AttemptRecord",
    "Problem",
    "RunLog",
    "Retrieval",
    "ScriptIndex",
    "line_list",
    "parse_run_log",
    "read_run_log",
]

# Problem kinds, for callers that count or filter them.
INVALID_UTF8 = "invalid_utf8"
INVALID_JSON = "invalid_json"
NOT_OBJECT = "not_object"
MISSING_FIELD = "missing_field"
BAD_FIELD = "bad_field"
BAD_ATTEMPT_NUMBER = "bad_attempt_number"
BAD_ATTEMPT_ID = "bad_attempt_id"
MISSING_SCRIPT = "missing_script"
EMPTY_SCRIPT = "empty_script"
BAD_TIMESTAMP = "bad_timestamp"
ENDED_BEFORE_STARTED = "ended_before_started"
BAD_RESULT = "bad_result"
DUPLICATE_ATTEMPT = "duplicate_attempt"
DUPLICATE_ATTEMPT_ID = "duplicate_attempt_id"
TRUNCATED_LINE = "truncated_line"
ATTEMPT_ID_MISMATCH = "attempt_id_mismatch"

# How ScriptIndex.attempt_for found a retrieval's attempt (or that it found none).
MAPPED_BY_ID = "attempt_id"
MAPPED_BY_NUMBER = "attempt_number"
MAPPED_BY_WINDOW = "window"
UNKNOWN_ATTEMPT = "unknown"
MAPPINGS = (MAPPED_BY_ID, MAPPED_BY_NUMBER, MAPPED_BY_WINDOW, UNKNOWN_ATTEMPT)

#: Key under which lines without a string ``type`` are counted in ``RunLog.skipped_types``.
MISSING_TYPE = "<missing>"

_UTF8_BOM = b"\xef\xbb\xbf"
_DETAIL_MAX = 200  # problem details quote input; keep them readable, the input itself is never cut


@dataclass(frozen=True)
class AttemptRecord:
    """One attempt line: the Worker's whole fix script and what the evaluator said of it."""

    line_no: int
    run_id: str
    rule_id: str
    attempt_number: int
    attempt_id: int | None
    started_at: datetime | None
    ended_at: datetime | None
    fix_script: str | None
    passed: bool | None
    failure_mode: str | None


@dataclass(frozen=True)
class Problem:
    """A line (or part of one) the reader could not use, with a machine-readable kind.

    ``line_no`` is the line the problem is reported at; ``lines`` lists every line involved when
    there are several (the copies of a duplicate attempt), and is empty otherwise.
    """

    line_no: int
    kind: str
    detail: str
    lines: tuple[int, ...] = ()

    @property
    def line_numbers(self) -> tuple[int, ...]:
        """Every line number this problem concerns, in file order."""
        return self.lines or (self.line_no,)


@dataclass
class RunLog:
    """Everything read from one run log: usable attempts, problems, and what was skipped."""

    attempts: list[AttemptRecord] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    lines_read: int = 0
    skipped_types: dict[str, int] = field(default_factory=dict)

    def problems_by_kind(self) -> dict[str, int]:
        """Return the number of problems per kind, kinds in alphabetical order."""
        counts = Counter(p.kind for p in self.problems)
        return {kind: counts[kind] for kind in sorted(counts)}

    def problem_lines(self) -> dict[str, list[int]]:
        """Return the line numbers of each kind's problems, kinds in alphabetical order."""
        lines: dict[str, set[int]] = {}
        for problem in self.problems:
            lines.setdefault(problem.kind, set()).update(problem.line_numbers)
        return {kind: sorted(lines[kind]) for kind in sorted(lines)}

    def problem_summary(self) -> str:
        """Return a one-line human summary such as
        ``"3 problems: invalid_json 2 (lines 4, 9), missing_script 1 (line 12)"``."""
        by_kind = self.problems_by_kind()
        if not by_kind:
            return "no problems"
        total = sum(by_kind.values())
        where = self.problem_lines()
        parts = ", ".join(f"{kind} {n} ({line_list(where[kind])})" for kind, n in by_kind.items())
        return f"{total} problem{'s' if total != 1 else ''}: {parts}"


#: Line numbers a summary spells out before it says how many more there are.
LINES_SHOWN = 20


def line_list(numbers: Iterable[int], shown: int = LINES_SHOWN) -> str:
    """``"line 4"``, ``"lines 4, 9, 12"``, or the first ``shown`` then ``"... (N more)"``."""
    ordered = sorted(set(numbers))
    if not ordered:
        return "no line"
    head = ", ".join(str(n) for n in ordered[:shown])
    more = f", ... ({len(ordered) - shown} more)" if len(ordered) > shown else ""
    return f"line{'s' if len(ordered) > 1 else ''} {head}{more}"


def read_run_log(path: str | PathLike[str], run_id: str | None = None) -> RunLog:
    """Read a JSONL run log from ``path``; bad lines become problems, never exceptions.

    When ``run_id`` is given, only that run's attempts are kept, and problems are recorded only for
    lines that belong to that run or cannot be attributed to any run. I/O errors (missing file,
    permission) do raise: they are whole-leg failures the caller must report.
    """
    with open(path, "rb") as fh:
        return parse_run_log(fh, run_id=run_id)


def parse_run_log(lines: Iterable[bytes], run_id: str | None = None) -> RunLog:
    """Parse run-log lines given as bytes; same guarantees as :func:`read_run_log`.

    A last line that does not parse and has no line break while every line before it had one is a
    ``truncated_line`` (the writer was cut off), not ``invalid_json``. Attempt lines that repeat
    one run, rule and attempt number are all dropped and reported once as ``duplicate_attempt``
    with every line number: which copy is the real one cannot be told, so none is used.
    """
    log = RunLog()
    skipped: Counter[str] = Counter()
    copies: dict[tuple[str, str, int], list[AttemptRecord]] = {}
    line_problems: dict[int, list[Problem]] = {}
    terminated_so_far = True  # every line before this one ended with a line break
    pending: tuple[int, bytes] | None = None

    def numbered() -> Iterator[tuple[int, bytes, bool]]:
        # One line of lookahead, to know which line is the last.
        nonlocal pending
        for item in enumerate(lines, start=1):
            if pending is not None:
                yield pending[0], pending[1], False
            pending = item
        if pending is not None:
            yield pending[0], pending[1], True

    for line_no, raw, is_last in numbered():
        log.lines_read = line_no
        cut_off = is_last and terminated_so_far and not raw.endswith(b"\n")
        terminated_so_far = terminated_so_far and raw.endswith(b"\n")
        if line_no == 1 and raw.startswith(_UTF8_BOM):
            raw = raw[len(_UTF8_BOM):]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            kind = TRUNCATED_LINE if cut_off else INVALID_UTF8
            log.problems.append(Problem(line_no, kind, _cut_detail(cut_off, str(exc))))
            continue
        if not text.strip():
            continue
        try:
            obj = jsontext.loads(text)
        except ValueError as exc:
            kind = TRUNCATED_LINE if cut_off else INVALID_JSON
            log.problems.append(Problem(line_no, kind, _cut_detail(cut_off, str(exc))))
            continue
        if not isinstance(obj, dict):
            log.problems.append(Problem(line_no, NOT_OBJECT, f"top-level JSON is {type(obj).__name__}"))
            continue
        # A lone surrogate escape decodes to a string that is not UTF-8 text: a script holding one
        # could be neither hashed nor stored. (A NUL is text to a script's hash; the ids that reach
        # the database are held to the id rule.)
        surrogate = jsontext.text_problem(obj, nul=False)
        if surrogate is not None:
            log.problems.append(Problem(line_no, INVALID_UTF8, surrogate))
            continue
        line_type = obj.get("type")
        if line_type != "attempt":
            skipped[line_type if isinstance(line_type, str) else MISSING_TYPE] += 1
            continue

        problems: list[Problem] = []
        record = _attempt_from(obj, line_no, problems)
        if record is None:
            # Unattributable (no usable run/rule/number): always reported, even when filtering by run.
            log.problems.extend(problems)
            continue
        if run_id is not None and record.run_id != run_id:
            continue
        copies.setdefault((record.run_id, record.rule_id, record.attempt_number), []).append(record)
        line_problems[line_no] = problems

    kept: list[AttemptRecord] = []
    for key, records in copies.items():
        if len(records) == 1:
            kept.append(records[0])
            continue
        numbers = tuple(r.line_no for r in records)
        log.problems.append(
            Problem(
                numbers[0],
                DUPLICATE_ATTEMPT,
                f"run {key[0]!r} rule {key[1]!r} attempt {key[2]} appears on {line_list(numbers)}; "
                "none of them is used, since which copy is the attempt cannot be told",
                numbers,
            )
        )
    first_line_of_id: dict[int, AttemptRecord] = {}
    for record in sorted(kept, key=lambda r: r.line_no):
        problems = line_problems[record.line_no]
        if record.attempt_id is not None:
            seen = first_line_of_id.get(record.attempt_id)
            if seen is not None:
                problems.append(
                    Problem(
                        record.line_no,
                        DUPLICATE_ATTEMPT_ID,
                        f"attempt_id {record.attempt_id} also on line {seen.line_no} "
                        f"(run {seen.run_id!r} rule {seen.rule_id!r} attempt {seen.attempt_number}); "
                        "lookups by this id will find nothing",
                    )
                )
            else:
                first_line_of_id[record.attempt_id] = record
        log.attempts.append(record)
    for line_no in sorted(line_problems):
        log.problems.extend(line_problems[line_no])
    log.problems.sort(key=lambda p: p.line_no)
    log.skipped_types = dict(sorted(skipped.items()))
    return log


def _cut_detail(cut_off: bool, detail: str) -> str:
    if not cut_off:
        return detail
    return f"the last line has no line break and does not parse (the writer was cut off?): {detail}"


def _attempt_from(obj: dict[str, Any], line_no: int, problems: list[Problem]) -> AttemptRecord | None:
    """Build a record from an attempt object, appending problems; None when it cannot be keyed."""
    run_id = _required_str(obj, "run_id", line_no, problems)
    rule_id = _required_str(obj, "rule_id", line_no, problems)
    attempt_number = _attempt_number(obj, line_no, problems)
    if run_id is None or rule_id is None or attempt_number is None:
        return None

    attempt_id: int | None = None
    raw_id = obj.get("attempt_id")
    if raw_id is not None:
        if _is_int(raw_id) and raw_id > 0:
            attempt_id = raw_id
        else:
            problems.append(
                Problem(
                    line_no, BAD_ATTEMPT_ID, f"attempt_id must be a positive integer, got {_show(raw_id)}"
                )
            )

    started_at = _timestamp(obj, "started_at", line_no, problems)
    ended_at = _timestamp(obj, "ended_at", line_no, problems)
    if started_at is not None and ended_at is not None and ended_at < started_at:
        problems.append(
            Problem(line_no, ENDED_BEFORE_STARTED, f"ended_at {ended_at.isoformat()} is before "
                    f"started_at {started_at.isoformat()}")
        )

    fix_script: str | None = None
    raw_script = obj.get("fix_script")
    if raw_script is None:
        problems.append(Problem(line_no, MISSING_SCRIPT, "no fix_script on attempt line"))
    elif not isinstance(raw_script, str):
        problems.append(
            Problem(line_no, MISSING_SCRIPT, f"fix_script must be a string, got {type(raw_script).__name__}")
        )
    elif not raw_script.strip():
        problems.append(Problem(line_no, EMPTY_SCRIPT, "fix_script is empty or whitespace only"))
    else:
        fix_script = raw_script  # verbatim: never stripped, never truncated

    passed, failure_mode = _result(obj, line_no, problems)
    return AttemptRecord(
        line_no=line_no,
        run_id=run_id,
        rule_id=rule_id,
        attempt_number=attempt_number,
        attempt_id=attempt_id,
        started_at=started_at,
        ended_at=ended_at,
        fix_script=fix_script,
        passed=passed,
        failure_mode=failure_mode,
    )


def _required_str(obj: dict[str, Any], key: str, line_no: int, problems: list[Problem]) -> str | None:
    value = obj.get(key)
    if value is None:
        problems.append(Problem(line_no, MISSING_FIELD, f"attempt line has no {key}"))
        return None
    if not isinstance(value, str) or not value.strip():
        problems.append(Problem(line_no, BAD_FIELD, f"{key} must be a non-empty string, got {_show(value)}"))
        return None
    return value


def _attempt_number(obj: dict[str, Any], line_no: int, problems: list[Problem]) -> int | None:
    if "attempt_number" not in obj or obj["attempt_number"] is None:
        problems.append(Problem(line_no, MISSING_FIELD, "attempt line has no attempt_number"))
        return None
    value = obj["attempt_number"]
    # bool is an int subclass and 1.0 is not an attempt number: both are rejected, never coerced.
    if not _is_int(value) or value < 1:
        problems.append(
            Problem(
                line_no, BAD_ATTEMPT_NUMBER, f"attempt_number must be a positive integer, got {_show(value)}"
            )
        )
        return None
    return int(value)


def _timestamp(obj: dict[str, Any], key: str, line_no: int, problems: list[Problem]) -> datetime | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        problems.append(
            Problem(line_no, BAD_TIMESTAMP, f"{key} must be an ISO 8601 string, got {_show(value)}")
        )
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        problems.append(Problem(line_no, BAD_TIMESTAMP, f"{key} is not ISO 8601: {_show(value)}"))
        return None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        # A naive time cannot be compared with retrieved_at (timestamptz) without guessing a zone;
        # guessing wrong would map retrievals to the wrong attempt, so we refuse instead.
        problems.append(Problem(line_no, BAD_TIMESTAMP, f"{key} has no UTC offset: {_show(value)}"))
        return None
    return parsed


def _result(obj: dict[str, Any], line_no: int, problems: list[Problem]) -> tuple[bool | None, str | None]:
    result = obj.get("result")
    if result is None:
        return None, None  # an attempt cut short has no result yet; not a problem for attribution
    if not isinstance(result, dict):
        problems.append(Problem(line_no, BAD_RESULT, f"result must be an object, got {_show(result)}"))
        return None, None
    passed = result.get("passed")
    if passed is not None and not isinstance(passed, bool):
        problems.append(Problem(line_no, BAD_RESULT, f"result.passed must be a boolean, got {_show(passed)}"))
        passed = None
    failure_mode = result.get("failure_mode")
    if failure_mode is not None and not isinstance(failure_mode, str):
        problems.append(
            Problem(line_no, BAD_RESULT, f"result.failure_mode must be a string, got {_show(failure_mode)}")
        )
        failure_mode = None
    return passed, failure_mode


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _show(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= _DETAIL_MAX else text[:_DETAIL_MAX] + "..."


class Retrieval(Protocol):
    """What :meth:`ScriptIndex.attempt_for` reads of a retrieval (the scoring pass's claimed row).

    ``attempt_id`` and ``attempt_number`` are the database's: the attempt row the retrieval is linked
    to, and that row's number (both None for an unlinked retrieval).
    """

    retrieval_id: int
    run_id: str
    rule_id: str
    attempt_id: int | None
    attempt_number: int | None
    retrieved_at: datetime


class ScriptIndex:
    """Maps retrievals to the attempt whose fix script they preceded; None whenever that is not certain.

    Lookups return the whole :class:`AttemptRecord`, so a caller can tell "no such attempt" (``None``)
    from "attempt found but its script is missing" (``record.fix_script is None``).

    Mapping rule (:meth:`attempt_for`). A log line's ``attempt_id`` is trusted only when the line's
    run, rule and attempt number are those of the retrieval's attempt row in the database; a line
    whose id names another attempt is reported (``attempt_id_mismatch``, with its line number) and
    not used through its id. A retrieval linked to an attempt then maps by run, rule and the
    database's attempt number; an unlinked one by the attempt window containing ``retrieved_at``;
    anything else is unknown, and counted. A run, rule and attempt number that several lines claim
    is never guessed: none of the copies is used (see :func:`parse_run_log`).

    Window rule (:meth:`by_window`). Retrievals are logged just before an attempt starts, so for one
    run and rule, with attempts ordered by ``attempt_number`` (never by file position):

    - the *end* of attempt ``j`` is its ``ended_at``; when that is missing, its own ``started_at``
      (every retrieval for attempt ``j`` happened at or before ``started_at_j``, and every retrieval
      for attempt ``j+1`` after ``ended_at_j >= started_at_j``, so ``started_at_j`` still separates
      them). The next attempt's ``started_at`` would *not*: retrievals for attempt ``j+1`` are logged
      before it, and would be credited to attempt ``j``.
    - attempt ``k``'s window is ``(end of k-1, end of k]``: open on the left, closed on the right.
    - attempt number 1's window is open to the left (no lower bound).
    - a retrieval after the last known end maps to nothing.
    - when a bound is unknown the window is unknown and nothing maps to it: an attempt whose
      timestamps are both missing, an attempt ``k > 1`` whose attempt ``k-1`` is absent from the log
      (a gap: its retrievals could belong to the missing attempt; a duplicated attempt is a gap),
      including a first known attempt numbered above 1.
    - if clock skew makes windows overlap so that two attempts contain the same instant, the
      lookup is ambiguous and returns None.
    """

    def __init__(self, attempts: Iterable[AttemptRecord], log: RunLog | None = None) -> None:
        self.log = log
        copies: dict[tuple[str, str, int], list[AttemptRecord]] = {}
        for record in attempts:
            copies.setdefault((record.run_id, record.rule_id, record.attempt_number), []).append(record)
        # A key several records claim is a duplicate: none of them is used.
        self._by_number: dict[tuple[str, str, int], AttemptRecord] = {
            key: records[0] for key, records in copies.items() if len(records) == 1
        }
        by_id: dict[int, AttemptRecord] = {}
        ambiguous_ids: set[int] = set()
        for record in self._by_number.values():
            if record.attempt_id is not None:
                if record.attempt_id in by_id:
                    ambiguous_ids.add(record.attempt_id)
                by_id.setdefault(record.attempt_id, record)
        self._by_id = {k: v for k, v in by_id.items() if k not in ambiguous_ids}

        per_rule: dict[tuple[str, str], list[AttemptRecord]] = {}
        for record in self._by_number.values():
            per_rule.setdefault((record.run_id, record.rule_id), []).append(record)
        self._windows: dict[tuple[str, str], list[tuple[datetime | None, datetime, AttemptRecord]]] = {}
        for rule_key, records in per_rule.items():
            self._windows[rule_key] = list(_windows(sorted(records, key=lambda r: r.attempt_number)))
        # What attempt_for decided, per retrieval id (a retrieval looked up twice is counted once).
        self._mapped: dict[int, str] = {}
        self._mismatches: dict[int, Problem] = {}

    @classmethod
    def from_run_log(cls, log: RunLog) -> ScriptIndex:
        """Build an index over every attempt a :class:`RunLog` kept; its problems join the report."""
        return cls(log.attempts, log)

    def by_attempt_id(self, attempt_id: int) -> AttemptRecord | None:
        """Return the attempt line carrying this id, or None if absent or carried by more than one.

        The id is the log's claim only; :meth:`attempt_for` checks it against the database's row.
        """
        return self._by_id.get(attempt_id)

    def by_number(self, run_id: str, rule_id: str, attempt_number: int) -> AttemptRecord | None:
        """Return the attempt with this run, rule and number, or None (absent or duplicated)."""
        return self._by_number.get((run_id, rule_id, attempt_number))

    def by_window(self, run_id: str, rule_id: str, retrieved_at: datetime) -> AttemptRecord | None:
        """Return the one attempt whose window contains ``retrieved_at``, or None (see class docstring).

        ``retrieved_at`` must be timezone-aware; a naive datetime raises ValueError.
        """
        if retrieved_at.tzinfo is None or retrieved_at.utcoffset() is None:
            raise ValueError("retrieved_at must be timezone-aware")
        matches = [
            record
            for lower, upper, record in self._windows.get((run_id, rule_id), ())
            if (lower is None or lower < retrieved_at) and retrieved_at <= upper
        ]
        return matches[0] if len(matches) == 1 else None

    def attempt_for(self, retrieval: Retrieval) -> AttemptRecord | None:
        """Return the attempt line a retrieval belongs to by the mapping rule (class docstring), or None.

        Each decision is remembered for :meth:`mapping_counts` and :meth:`report_lines`.
        """
        record, how = self._decide(retrieval)
        self._mapped[retrieval.retrieval_id] = how
        return record

    def _decide(self, row: Retrieval) -> tuple[AttemptRecord | None, str]:
        if row.attempt_id is not None and row.attempt_number is not None:
            claimed = self._by_id.get(row.attempt_id)
            if claimed is not None:
                if (claimed.run_id, claimed.rule_id, claimed.attempt_number) == (
                        row.run_id, row.rule_id, row.attempt_number):
                    return claimed, MAPPED_BY_ID
                self._mismatch(claimed, f"attempt_id {row.attempt_id} is run {row.run_id!r} rule "
                                        f"{row.rule_id!r} attempt {row.attempt_number} in the database")
            record = self._by_number.get((row.run_id, row.rule_id, row.attempt_number))
            if record is None:
                return None, UNKNOWN_ATTEMPT
            if record.attempt_id is not None and record.attempt_id != row.attempt_id:
                self._mismatch(record, f"run {row.run_id!r} rule {row.rule_id!r} attempt "
                                       f"{row.attempt_number} is attempt_id {row.attempt_id} in the database")
            return record, MAPPED_BY_NUMBER
        record = self.by_window(row.run_id, row.rule_id, row.retrieved_at)
        return record, (MAPPED_BY_WINDOW if record is not None else UNKNOWN_ATTEMPT)

    def _mismatch(self, record: AttemptRecord, truth: str) -> None:
        if record.line_no not in self._mismatches:
            self._mismatches[record.line_no] = Problem(
                record.line_no, ATTEMPT_ID_MISMATCH,
                f"line {record.line_no} says run {record.run_id!r} rule {record.rule_id!r} attempt "
                f"{record.attempt_number} attempt_id {record.attempt_id}, but {truth}; its id is not trusted",
            )

    def mapping_counts(self) -> dict[str, int]:
        """Retrievals looked up so far, by how their attempt was found (``unknown``: not found)."""
        counts = Counter(self._mapped.values())
        return {how: counts[how] for how in MAPPINGS if counts[how]}

    def mismatches(self) -> list[Problem]:
        """The ``attempt_id_mismatch`` problems found by the lookups so far, in line order."""
        return [self._mismatches[n] for n in sorted(self._mismatches)]

    def report_lines(self) -> list[str]:
        """Plain-words lines for a summary: the log's problems by kind with their line numbers, the
        mismatched ids with theirs, and how the retrievals looked up so far were mapped."""
        out: list[str] = []
        problems = list(self.log.problems) if self.log is not None else []
        problems.extend(self.mismatches())
        if problems:
            merged = RunLog(problems=problems)
            where = merged.problem_lines()
            out.append("run-log problems (lines skipped, incomplete or not trusted): " + ", ".join(
                f"{kind} {n} ({line_list(where[kind])})" for kind, n in merged.problems_by_kind().items()))
        counts = self.mapping_counts()
        if counts:
            names = {MAPPED_BY_ID: "by attempt_id", MAPPED_BY_NUMBER: "by attempt number",
                     MAPPED_BY_WINDOW: "by window", UNKNOWN_ATTEMPT: "attempt unknown"}
            out.append("scripts found: " + ", ".join(f"{names[how]} {n}" for how, n in counts.items()))
        return out

    def __len__(self) -> int:
        return len(self._by_number)


def _windows(
    ordered: list[AttemptRecord],
) -> Iterator[tuple[datetime | None, datetime, AttemptRecord]]:
    """Yield (exclusive lower bound or None for open, inclusive upper bound, attempt) for known windows."""
    previous: AttemptRecord | None = None
    for record in ordered:
        upper = _end(record)
        if record.attempt_number == 1:
            lower_known, lower = True, None
        elif previous is not None and previous.attempt_number == record.attempt_number - 1:
            lower = _end(previous)
            lower_known = lower is not None
        else:
            lower_known, lower = False, None
        if upper is not None and lower_known:
            yield lower, upper, record
        previous = record


def _end(record: AttemptRecord) -> datetime | None:
    return record.ended_at if record.ended_at is not None else record.started_at
