"""Load tips and run logs through the public write path.

The per-call replay (``bulk=False``), exactly as an agent writes: a ``retrieval`` line calls
``ctxgraph.log_retrievals``; the following ``attempt`` line calls ``ctxgraph.save_attempt``, links
the retrievals logged for it with ``ctxgraph.update_retrieval_attempt_ids`` and records the
evaluator's result with ``ctxgraph.record_outcome``; ``run_end`` sets the run's end. Four round
trips per attempt.

The bulk ingest (the default): the same lines are staged with one COPY and written by
``ctxgraph.ingest_run_log``, which applies the per-call functions' own checks to every line and
leaves the same end state. A file loads in one transaction either way: a bad line (reported with
its number, by Python or by the SQL function) or a run already loaded leaves nothing half-written.
The transaction is run by :func:`ctxgraph.store.run_in_transaction`: when a concurrent writer and
this load deadlock on the tips' stats rows and PostgreSQL aborts the load (40P01), the file is
written again from its first line, up to ``DEADLOCK_RETRIES`` times.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg

from ctxgraph.store import DEADLOCK_RETRIES, Client, Store, run_in_transaction

__all__ = ["LoadError", "RunLoaded", "load_run", "load_tips", "stage_lines"]


class LoadError(ValueError):
    """A tips file or run log that cannot be loaded; the message names the file and line."""


@dataclass(frozen=True)
class RunLoaded:
    run_id: str
    attempts: int
    retrievals: int


def _lines(path: Path):
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                item = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise LoadError(f"{path}:{number}: not a JSON line ({exc})") from exc
            if not isinstance(item, dict):
                raise LoadError(f"{path}:{number}: not a JSON object")
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


def _integer(path: Path, number: int, item: dict, key: str) -> int | None:
    value = item.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise LoadError(f"{path}:{number}: {key} must be an integer, got {value!r}")
    return value


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
            tips = item.get("tips")
            if not isinstance(tips, list) or not all(isinstance(t, dict) for t in tips):
                raise LoadError(f"{path}:{number}: a retrieval line needs a list of tips")
            unknown = [t.get("tip_ref") for t in tips if t.get("tip_ref") not in tip_ids]
            if unknown:
                raise LoadError(f"{path}:{number}: unknown tip_ref {', '.join(map(str, unknown))}")
            scores = [t.get("similarity_score") for t in tips]
            if any(s is not None and (isinstance(s, bool) or not isinstance(s, (int, float)))
                   for s in scores):
                raise LoadError(f"{path}:{number}: similarity_score must be a number")
            retrieved_at = _time(path, number, item.get("retrieved_at"))
            if retrieved_at is None:
                raise LoadError(f"{path}:{number}: a retrieval line needs retrieved_at")
            yield (number, kind, _text(path, number, item, "run_id"), _text(path, number, item, "rule_id"),
                   _integer(path, number, item, "attempt_number"), retrieved_at,
                   [tip_ids[t["tip_ref"]] for t in tips], [None if s is None else float(s) for s in scores],
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


def _load_run_per_call(conn: psycopg.Connection, skill: str, path: Path,
                       tip_ids: dict[str, int], deadlock_retries: int) -> list[RunLoaded]:
    client = Client(conn)

    def replay() -> list[RunLoaded]:
        pending: dict[tuple[str, str, int], list[int]] = {}
        loaded: dict[str, list[int]] = {}
        for number, item in _lines(path):
            kind = item.get("type")
            if kind == "retrieval":
                run_id, rule_id, attempt = item.get("run_id"), item.get("rule_id"), item.get("attempt_number")
                tips = item.get("tips")
                if not isinstance(tips, list) or not all(isinstance(t, dict) for t in tips):
                    raise LoadError(f"{path}:{number}: a retrieval line needs a list of tips")
                unknown = [t.get("tip_ref") for t in tips if t.get("tip_ref") not in tip_ids]
                if unknown:
                    raise LoadError(f"{path}:{number}: unknown tip_ref {', '.join(map(str, unknown))}")
                retrieved_at = _time(path, number, item.get("retrieved_at"))
                if retrieved_at is None:
                    raise LoadError(f"{path}:{number}: a retrieval line needs retrieved_at")
                ids = client.log_retrievals(skill, run_id, rule_id, [tip_ids[t["tip_ref"]] for t in tips],
                                            [t.get("similarity_score") for t in tips], retrieved_at)
                pending.setdefault((run_id, rule_id, attempt), []).extend(ids)
                loaded.setdefault(run_id, [0, 0])[1] += len(ids)
            elif kind == "attempt":
                run_id, rule_id, attempt = item.get("run_id"), item.get("rule_id"), item.get("attempt_number")
                result = item.get("result") or {}
                if not isinstance(result, dict) or not isinstance(result.get("passed"), bool):
                    raise LoadError(f"{path}:{number}: an attempt line needs result.passed (true or false)")
                attempt_id = client.save_attempt(skill, run_id, rule_id, attempt, item.get("approach"),
                                                 _time(path, number, item.get("started_at")),
                                                 _time(path, number, item.get("ended_at")))
                retrievals = pending.pop((run_id, rule_id, attempt), [])
                if retrievals:
                    client.update_retrieval_attempt_ids(skill, retrievals, attempt_id)
                client.record_outcome(skill, attempt_id, result["passed"], result.get("failure_mode"))
                loaded.setdefault(run_id, [0, 0])[0] += 1
            elif kind == "run_end" and item.get("ended_at"):
                Store(conn).set_run_ended(skill, item.get("run_id"), _time(path, number, item["ended_at"]))
            # run_start, note, eval_detail and unknown types carry nothing the write path takes.
        return [RunLoaded(run_id, counts[0], counts[1]) for run_id, counts in loaded.items()]

    return run_in_transaction(conn, replay, deadlock_retries=deadlock_retries)
