"""Tolerant reader for the agent's JSONL run log, and an index from retrievals to fix scripts.

The agent writes one JSON object per line. Attempt lines carry the Worker's whole fix script::

    {"type": "attempt", "run_id": "run-7", "rule_id": "harden_x", "attempt_number": 1,
     "attempt_id": 123, "started_at": "2026-05-01T10:00:00Z", "ended_at": "2026-05-01T10:02:00Z",
     "fix_script": "#!/bin/bash\\n...", "result": {"passed": false, "failure_mode": "clean_failure"}}

``attempt_id``, the timestamps and ``result`` are optional; extra keys are ignored. Lines of any other
``type`` (``run_start``, ``retrieval``, ...) are skipped and counted. A malformed line never stops the
read: it is recorded as a :class:`Problem` and skipped, so one bad line costs one attempt, not the run.

This module is a leaf: it reads files and builds in-memory indexes, it never speaks SQL and never
imports the other ctxgraph modules. It never truncates a script.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from os import PathLike
from typing import Any

__all__ = [
    "AttemptRecord",
    "Problem",
    "RunLog",
    "ScriptIndex",
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
    """A line (or part of one) the reader could not use, with a machine-readable kind."""

    line_no: int
    kind: str
    detail: str


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

    def problem_summary(self) -> str:
        """Return a one-line human summary such as ``"3 problems: invalid_json 2, missing_script 1"``."""
        by_kind = self.problems_by_kind()
        if not by_kind:
            return "no problems"
        total = sum(by_kind.values())
        parts = ", ".join(f"{kind} {n}" for kind, n in by_kind.items())
        return f"{total} problem{'s' if total != 1 else ''}: {parts}"


def read_run_log(path: str | PathLike[str], run_id: str | None = None) -> RunLog:
    """Read a JSONL run log from ``path``; bad lines become problems, never exceptions.

    When ``run_id`` is given, only that run's attempts are kept, and problems are recorded only for
    lines that belong to that run or cannot be attributed to any run. I/O errors (missing file,
    permission) do raise: they are whole-leg failures the caller must report.
    """
    with open(path, "rb") as fh:
        return parse_run_log(fh, run_id=run_id)


def parse_run_log(lines: Iterable[bytes], run_id: str | None = None) -> RunLog:
    """Parse run-log lines given as bytes; same guarantees as :func:`read_run_log`."""
    log = RunLog()
    skipped: Counter[str] = Counter()
    first_line_of: dict[tuple[str, str, int], int] = {}
    first_line_of_id: dict[int, tuple[int, tuple[str, str, int]]] = {}

    for line_no, raw in enumerate(lines, start=1):
        log.lines_read = line_no
        if line_no == 1 and raw.startswith(_UTF8_BOM):
            raw = raw[len(_UTF8_BOM):]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            log.problems.append(Problem(line_no, INVALID_UTF8, str(exc)))
            continue
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except ValueError as exc:
            log.problems.append(Problem(line_no, INVALID_JSON, str(exc)))
            continue
        if not isinstance(obj, dict):
            log.problems.append(Problem(line_no, NOT_OBJECT, f"top-level JSON is {type(obj).__name__}"))
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

        key = (record.run_id, record.rule_id, record.attempt_number)
        if key in first_line_of:
            log.problems.append(
                Problem(
                    line_no,
                    DUPLICATE_ATTEMPT,
                    f"run {record.run_id!r} rule {record.rule_id!r} attempt {record.attempt_number} "
                    f"repeats line {first_line_of[key]}; kept line {first_line_of[key]}, "
                    f"skipped line {line_no}",
                )
            )
            continue
        first_line_of[key] = line_no
        if record.attempt_id is not None:
            seen = first_line_of_id.get(record.attempt_id)
            if seen is not None:
                problems.append(
                    Problem(
                        line_no,
                        DUPLICATE_ATTEMPT_ID,
                        f"attempt_id {record.attempt_id} also on line {seen[0]} "
                        f"(run {seen[1][0]!r} rule {seen[1][1]!r} attempt {seen[1][2]}); "
                        "lookups by this id will find nothing",
                    )
                )
            else:
                first_line_of_id[record.attempt_id] = (line_no, key)
        log.problems.extend(problems)
        log.attempts.append(record)

    log.skipped_types = dict(sorted(skipped.items()))
    return log


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


class ScriptIndex:
    """Maps retrievals to the attempt whose fix script they preceded; None whenever that is not certain.

    Lookups return the whole :class:`AttemptRecord`, so a caller can tell "no such attempt" (``None``)
    from "attempt found but its script is missing" (``record.fix_script is None``).

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
      (a gap: its retrievals could belong to the missing attempt), including a first known attempt
      numbered above 1.
    - if clock skew makes windows overlap so that two attempts contain the same instant, the
      lookup is ambiguous and returns None.
    """

    def __init__(self, attempts: Iterable[AttemptRecord]) -> None:
        self._by_number: dict[tuple[str, str, int], AttemptRecord] = {}
        by_id: dict[int, AttemptRecord] = {}
        ambiguous_ids: set[int] = set()
        for record in attempts:
            key = (record.run_id, record.rule_id, record.attempt_number)
            self._by_number.setdefault(key, record)
            if record.attempt_id is not None:
                if record.attempt_id in by_id and by_id[record.attempt_id] is not record:
                    ambiguous_ids.add(record.attempt_id)
                by_id.setdefault(record.attempt_id, record)
        self._by_id = {k: v for k, v in by_id.items() if k not in ambiguous_ids}

        per_rule: dict[tuple[str, str], list[AttemptRecord]] = {}
        for record in self._by_number.values():
            per_rule.setdefault((record.run_id, record.rule_id), []).append(record)
        self._windows: dict[tuple[str, str], list[tuple[datetime | None, datetime, AttemptRecord]]] = {}
        for rule_key, records in per_rule.items():
            self._windows[rule_key] = list(_windows(sorted(records, key=lambda r: r.attempt_number)))

    @classmethod
    def from_run_log(cls, log: RunLog) -> ScriptIndex:
        """Build an index over every attempt a :class:`RunLog` kept."""
        return cls(log.attempts)

    def by_attempt_id(self, attempt_id: int) -> AttemptRecord | None:
        """Return the attempt with this id, or None if absent or carried by more than one attempt."""
        return self._by_id.get(attempt_id)

    def by_number(self, run_id: str, rule_id: str, attempt_number: int) -> AttemptRecord | None:
        """Return the attempt with this run, rule and number, or None."""
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
