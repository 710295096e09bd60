"""Load tips and run logs through the public write path.

The per-call replay (``bulk=False``), exactly as an agent writes: a ``retrieval`` line calls
``ctxgraph.log_retrievals``; the following ``attempt`` line calls ``ctxgraph.save_attempt``, links
the retrievals logged for it with ``ctxgraph.update_retrieval_attempt_ids`` and records the
evaluator's result with ``ctxgraph.record_outcome``; ``run_end`` sets the run's end. Four round
trips per attempt, and the session's plans made again each time the file's attempts double, so that
an attempt costs the same at the end of a long file as at its start.

The bulk ingest (the default): the same lines are staged with one COPY and written by
``ctxgraph.ingest_run_log``, which applies the per-call functions' own checks to every line and
leaves the same end state. A file loads in one transaction either way: a bad line (reported with
its number, by Python or by the SQL function) or a run already loaded leaves nothing half-written.
The transaction is run by :func:`ctxgraph.connection_store.run_in_transaction`: when a concurrent writer and
this load deadlock on the tips' stats rows and PostgreSQL aborts the load (40P01), the file is
written again from its first line, up to ``DEADLOCK_RETRIES`` times.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg

from ctxgraph import jsontext
from ctxgraph.client import Client
from ctxgraph.connection_store import DEADLOCK_RETRIES, run_in_transaction
from ctxgraph.scoring_store import Store

__all__ = ["LoadError", "RunLoaded", "load_run", "load_tips", "refused_by_write_path", "stage_lines"]


class LoadError(ValueError):
    """A tips file or run log that cannot be loaded; the message names the file and line."""


@dataclass(frozen=True)
class RunLoaded:
    run_id: str
    attempts: int
    retrievals: int


def _lines(path: Path):
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise LoadError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    with handle:
        number = 0
        while True:
            try:
                raw = handle.readline()
            except OSError as exc:
                raise LoadError(f"{path}:{number + 1}: cannot read: {exc.strerror or exc}") from exc
            if not raw:
                return
            number += 1
            if not raw.strip():
                continue
            try:
                item = jsontext.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise LoadError(f"{path}:{number}: not a JSON line ({exc})") from exc
            if not isinstance(item, dict):
                raise LoadError(f"{path}:{number}: not a JSON object")
            problem = jsontext.text_problem(item)
            if problem is not None:
                raise LoadError(f"{path}:{number}: {problem}")
            yield number, item


def _time(path: Path, number: int, value: object) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise LoadError(f"{path}:{number}: timestamp must be a string, got {value!r}")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise LoadError(f"{path}:{number}: bad timestamp {value!r}") from exc
    if parsed.tzinfo is None:
        raise LoadError(f"{path}:{number}: timestamp {value!r} has no UTC offset")
    return parsed


def load_tips(conn: psycopg.Connection, skill: str, path: Path) -> dict[str, int]:
    """Insert the tips of a tips.jsonl file (``tip_ref``, ``rule_id``, ``body``); return tip_ref -> id.

    A tip whose rule and body are already in memory is reused, not duplicated, so loading twice is safe.
    """
    refs: dict[str, int] = {}
    store = Store(conn)
    with conn.transaction():
        for number, item in _lines(path):
            ref, body, rule_id = item.get("tip_ref"), item.get("body"), item.get("rule_id")
            if not isinstance(ref, str) or not isinstance(body, str) or not body.strip():
                raise LoadError(f"{path}:{number}: a tip needs a string tip_ref and a non-empty body")
            if rule_id is not None and not isinstance(rule_id, str):
                raise LoadError(f"{path}:{number}: rule_id must be a string, got {rule_id!r}")
            if ref in refs:
                raise LoadError(f"{path}:{number}: tip_ref {ref!r} appears twice")
            refs[ref] = store.tip_id_for(skill, rule_id, body)
    return refs


def load_run(conn: psycopg.Connection, skill: str, path: Path, tip_ids: dict[str, int],
             *, bulk: bool = True, deadlock_retries: int = DEADLOCK_RETRIES) -> list[RunLoaded]:
    """Load every run in one run log through the write path, one transaction for the file.

    ``bulk`` (the default) stages the file with COPY and writes it with ``ctxgraph.ingest_run_log``;
    ``bulk=False`` replays it through the four per-call functions. Both leave the same rows. A load
    aborted by a deadlock (40P01) is run again, up to ``deadlock_retries`` times.
    """
    if bulk:
        return _load_run_bulk(conn, skill, path, tip_ids, deadlock_retries)
    return _load_run_per_call(conn, skill, path, tip_ids, deadlock_retries)


def _text(path: Path, number: int, item: dict, key: str) -> str | None:
    value = item.get(key)
    if value is not None and not isinstance(value, str):
        raise LoadError(f"{path}:{number}: {key} must be a string, got {value!r}")
    return value


# The write path's integers are PostgreSQL integers.
_INT4 = range(-2**31, 2**31)


def _integer(path: Path, number: int, item: dict, key: str) -> int | None:
    value = item.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise LoadError(f"{path}:{number}: {key} must be an integer, got {value!r}")
    if value is not None and value not in _INT4:
        raise LoadError(f"{path}:{number}: {key} {value} is out of range (at most {_INT4.stop - 1})")
    return value


def _scores(path: Path, number: int, tips: list[dict]) -> list[float | None]:
    scores = [t.get("similarity_score") for t in tips]
    if any(s is not None and (isinstance(s, bool) or not isinstance(s, (int, float))) for s in scores):
        raise LoadError(f"{path}:{number}: similarity_score must be a number")
    try:
        return [None if s is None else float(s) for s in scores]
    except OverflowError as exc:
        raise LoadError(f"{path}:{number}: similarity_score is too large for a number") from exc


def _tip_ids(path: Path, number: int, item: dict, tip_ids: dict[str, int]) -> list[int]:
    tips = item.get("tips")
    if not isinstance(tips, list) or not all(isinstance(t, dict) for t in tips):
        raise LoadError(f"{path}:{number}: a retrieval line needs a list of tips")
    unknown = [t.get("tip_ref") for t in tips if not isinstance(t.get("tip_ref"), str) or t["tip_ref"] not in tip_ids]
    if unknown:
        raise LoadError(f"{path}:{number}: unknown tip_ref {', '.join(map(repr, unknown))}")
    return [tip_ids[t["tip_ref"]] for t in tips]


def stage_lines(path: Path, tip_ids: dict[str, int]) -> Iterator[tuple[Any, ...]]:
    """Yield the staging row of every line the write path takes, in file order.

    Rows are in ``Client.ingest_run_log``'s column order.

    The checks made here are the loader's own (JSON, types, tip refs, timestamps), with the same
    messages as the per-call replay; the write path's checks are the SQL function's. A bad line
    raises LoadError when it is reached, after the rows of the lines before it.
    """
    for number, item in _lines(path):
        kind = item.get("type")
        if kind == "retrieval":
            ids = _tip_ids(path, number, item, tip_ids)
            scores = _scores(path, number, item["tips"])
            retrieved_at = _time(path, number, item.get("retrieved_at"))
            if retrieved_at is None:
                raise LoadError(f"{path}:{number}: a retrieval line needs retrieved_at")
            yield (number, kind, _text(path, number, item, "run_id"), _text(path, number, item, "rule_id"),
                   _integer(path, number, item, "attempt_number"), retrieved_at, ids, scores,
                   None, None, None, None, None)
        elif kind == "attempt":
            result = item.get("result") or {}
            if not isinstance(result, dict) or not isinstance(result.get("passed"), bool):
                raise LoadError(f"{path}:{number}: an attempt line needs result.passed (true or false)")
            failure_mode = result.get("failure_mode")
            if failure_mode is not None and not isinstance(failure_mode, str):
                raise LoadError(f"{path}:{number}: failure_mode must be a string, got {failure_mode!r}")
            yield (number, kind, _text(path, number, item, "run_id"), _text(path, number, item, "rule_id"),
                   _integer(path, number, item, "attempt_number"), None, None, None,
                   _text(path, number, item, "approach"), _time(path, number, item.get("started_at")),
                   _time(path, number, item.get("ended_at")), result["passed"], failure_mode)
        elif kind == "run_end" and item.get("ended_at"):
            yield (number, kind, _text(path, number, item, "run_id"), None, None, None, None, None, None,
                   None, _time(path, number, item["ended_at"]), None, None)
        # run_start, note, eval_detail and unknown types carry nothing the write path takes.


def _load_run_bulk(conn: psycopg.Connection, skill: str, path: Path,
                   tip_ids: dict[str, int], deadlock_retries: int) -> list[RunLoaded]:
    rows: list[tuple[Any, ...]] = []
    problem: LoadError | None = None
    try:
        rows.extend(stage_lines(path, tip_ids))
    except LoadError as exc:
        problem = exc
    client = Client(conn)

    def write() -> list[RunLoaded]:
        if problem is None:
            return [RunLoaded(r["run_id"], r["attempts"], r["retrievals"])
                    for r in client.ingest_run_log(skill, rows)]
        # The replay would have stopped at the first bad line of either kind: the write path's
        # checks run on the lines before the loader's bad one (and are rolled back), so an earlier
        # line the SQL refuses is the error reported.
        with conn.transaction(force_rollback=True):
            client.ingest_run_log(skill, rows)
        raise problem

    return run_in_transaction(conn, write, deadlock_retries=deadlock_retries)


def refused_by_write_path(exc: BaseException) -> bool:
    """True for the write path's documented refusals (SQLSTATE 22xxx, 23xxx, P0001, P0002): bad input."""
    sqlstate = getattr(exc, "sqlstate", None) or ""
    return sqlstate[:2] in ("22", "23") or sqlstate in ("P0001", "P0002")


#: The per-call replay plans its statements again after this many attempts, then each time the
#: count doubles, and every this many attempts analyses a table recorded as empty while it fills
#: (see _load_run_per_call).
REPLAN_FIRST = 64


def _load_run_per_call(conn: psycopg.Connection, skill: str, path: Path,
                       tip_ids: dict[str, int], deadlock_retries: int) -> list[RunLoaded]:
    client = Client(conn)
    store = Store(conn)

    def replay() -> list[RunLoaded]:
        pending: dict[tuple[Any, Any, Any], list[int]] = {}
        loaded: dict[Any, list[int]] = {}
        # A session keeps the plan it first made for each statement of the write path (its
        # functions force generic plans; every cached plan, the key checks' included, lasts until
        # the tables are analysed again), and no analyse sees a load's rows before it commits. Made
        # while the skill's tables were empty or small, with no statistics, a plan reads a whole
        # partition where an index probe would do (a sequential scan, or an index scan on skill
        # alone, which looks selective without statistics): on a fresh database every call then
        # read all the file had loaded so far, 4.3 ms per attempt at 250 attempts and 59 ms at
        # 3,000. Planned again each time the file's attempts double, a plan serves until the
        # file's rows have doubled since it was made: eleven replans for 100,000 attempts.
        # Planning needs the tables' sizes right, and an autovacuum that visits one while this
        # transaction's rows are uncommitted records it as holding none over the pages they fill
        # (no vacuum or analyse counts another transaction's uncommitted rows): planned on that,
        # every statement takes the table for empty until an analyse after the load commits (a
        # test's VACUUM at attempt 100 of 640 took each attempt's reads from 148 rows to 12,298).
        # An ANALYZE in this transaction counts its rows: every REPLAN_FIRST attempts a table of
        # the skill so recorded is analysed, where this role may, and the plans made again (its
        # lock, which only a VACUUM, ANALYZE or index build of that table waits for, is held
        # until the file is written).
        replan_at = REPLAN_FIRST
        attempts = 0
        # The lines the bulk load stages, with its checks and values: both modes take and refuse
        # the same lines. A call the write path refuses is reported at its line, as the bulk load's.
        for (number, kind, run_id, rule_id, attempt, retrieved_at, ids, scores, approach, started_at, ended_at,
             passed, failure_mode) in stage_lines(path, tip_ids):
            try:
                if kind == "retrieval":
                    logged = client.log_retrievals(skill, run_id, rule_id, ids, scores, retrieved_at)
                    pending.setdefault((run_id, rule_id, attempt), []).extend(logged)
                    loaded.setdefault(run_id, [0, 0])[1] += len(logged)
                elif kind == "attempt":
                    attempt_id = client.save_attempt(skill, run_id, rule_id, attempt, approach, started_at, ended_at)
                    retrievals = pending.pop((run_id, rule_id, attempt), [])
                    if retrievals:
                        client.update_retrieval_attempt_ids(skill, retrievals, attempt_id)
                    client.record_outcome(skill, attempt_id, passed, failure_mode)
                    loaded.setdefault(run_id, [0, 0])[0] += 1
                    attempts += 1
                    if attempts % REPLAN_FIRST == 0:
                        if store.analyze_recorded_empty(skill) or attempts == replan_at:
                            store.replan()
                        if attempts == replan_at:
                            replan_at *= 2
                else:
                    store.set_run_ended(skill, run_id, ended_at)
            except psycopg.Error as exc:
                if not refused_by_write_path(exc):
                    raise
                message = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
                raise LoadError(f"{path}:{number}: {message} (SQLSTATE {exc.sqlstate})") from exc
        return [RunLoaded(run_id, counts[0], counts[1]) for run_id, counts in loaded.items()]

    return run_in_transaction(conn, replay, deadlock_retries=deadlock_retries)
