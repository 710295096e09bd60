"""Shared fixtures: a real PostgreSQL with ctxgraph deployed (DATABASE_URL, set by `make test`)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg
import pytest

BASE_TIME = datetime(2026, 5, 2, 10, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="session")
def database_url() -> str:
    url = os.environ.get("DATABASE_URL")
    if not url:
        pytest.fail("DATABASE_URL is not set: run the tests with `make test`, which deploys a throwaway database")
    return url


@pytest.fixture
def conn(database_url: str) -> Iterator[psycopg.Connection]:
    from ctxgraph.connection_store import connect

    connection = connect(database_url)
    try:
        yield connection
    finally:
        connection.rollback()
        connection.close()


@dataclass
class SeededAttempt:
    attempt_id: int
    rule_id: str
    attempt_number: int
    retrieval_ids: list[int]
    tip_ids: list[int]
    script: str | None


@dataclass
class SeededRun:
    skill: str
    run_id: str
    attempts: list[SeededAttempt]
    log_path: Path

    @property
    def retrieval_ids(self) -> list[int]:
        return [rid for a in self.attempts for rid in a.retrieval_ids]


def seed_run(
    conn: psycopg.Connection,
    tmp_path: Path,
    attempts: Sequence[dict],
    *,
    skill: str = "stig",
    link: bool = True,
    log_attempt_ids: bool = False,
    extra_log_lines: Sequence[str] = (),
) -> SeededRun:
    """Load a run through the public write path (as an agent would) and write its JSONL log.

    Each attempt is {"rule": str, "tips": [tip body, ...], "script": str | None, "passed": bool,
    "failure_mode": str | None}; a tip given as an int is the id of a tip already stored (the same
    tip retrieved again). Attempt numbers count per rule; times are 10 minutes apart.
    """
    from ctxgraph.client import Client

    client = Client(conn)
    run_id = f"run-{uuid.uuid4().hex[:10]}"
    numbers: dict[str, int] = {}
    seeded: list[SeededAttempt] = []
    lines: list[str] = []
    for n, spec in enumerate(attempts):
        rule = spec["rule"]
        numbers[rule] = numbers.get(rule, 0) + 1
        number = numbers[rule]
        retrieved_at = BASE_TIME + timedelta(minutes=10 * n)
        started_at = retrieved_at + timedelta(seconds=5)
        ended_at = started_at + timedelta(minutes=2)
        tip_ids = [
            body if isinstance(body, int) else conn.execute(
                f"INSERT INTO {skill}.tips (rule_id, body) VALUES (%s, %s) RETURNING id", (rule, body)
            ).fetchone()[0]
            for body in spec["tips"]
        ]
        retrieval_ids = client.log_retrievals(skill, run_id, rule, tip_ids,
                                              [0.9 - 0.1 * i for i in range(len(tip_ids))], retrieved_at)
        attempt_id = client.save_attempt(skill, run_id, rule, number, None, started_at, ended_at)
        if link:
            client.update_retrieval_attempt_ids(skill, retrieval_ids, attempt_id)
        client.record_outcome(skill, attempt_id, spec.get("passed", True), spec.get("failure_mode"))
        seeded.append(SeededAttempt(attempt_id, rule, number, retrieval_ids, tip_ids, spec.get("script")))
        line = {
            "type": "attempt", "run_id": run_id, "rule_id": rule, "attempt_number": number,
            "started_at": started_at.isoformat(), "ended_at": ended_at.isoformat(),
            "result": {"passed": spec.get("passed", True), "failure_mode": spec.get("failure_mode")},
        }
        if log_attempt_ids:
            line["attempt_id"] = attempt_id
        if spec.get("script") is not None:
            line["fix_script"] = spec["script"]
        lines.append(json.dumps(line))
    conn.commit()
    log_path = tmp_path / f"{run_id}.jsonl"
    log_path.write_text("\n".join([*extra_log_lines, *lines]) + "\n", encoding="utf-8")
    return SeededRun(skill, run_id, seeded, log_path)


@pytest.fixture
def seed(conn: psycopg.Connection, tmp_path: Path):
    def _seed(attempts: Sequence[dict], **kwargs) -> SeededRun:
        return seed_run(conn, tmp_path, attempts, **kwargs)

    return _seed
