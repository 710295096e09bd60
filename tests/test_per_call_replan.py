"""`ctxgraph load --per-call` reads what each attempt touches, not what the load has written so far.

A session keeps the plans it made on its first calls, and no analyse sees a load's rows before it
commits: on a fresh skill those plans read whole partitions (the log, the attempts, the levels), so
each call cost what the file had loaded before it (4.3 ms per attempt at 250 attempts, 59 ms at
3,000). The loader plans again each time the attempts it wrote double, and analyses a table the
statistics record as empty while the load fills it. Work is counted, not timed:
the rows the load's calls read from the skill's tables (pg_stat_xact_user_tables, this transaction's
counts), per attempt, early in the file and late.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from ctxgraph import loader
from ctxgraph.client import Client

RULES, TIPS_PER_RULE, ATTEMPTS = 20, 10, 640


@pytest.fixture
def fresh_skill(database_url: str) -> Iterator[str]:
    """A new skill with the statistics of a fresh deployment: every partition analysed while empty."""
    skill = f"replan_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute("SELECT ctxgraph.add_skill(%s, 'graded')", (skill,))
        for (name,) in admin.execute(
                "SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace"
                " WHERE n.nspname = %s AND c.relkind = 'r'", (skill,)).fetchall():
            admin.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(skill, name)))
    try:
        yield skill
    finally:
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute("SELECT ctxgraph.drop_skill(%s)", (skill,))


def write_files(tmp_path: Path) -> tuple[Path, Path]:
    """tips.jsonl (RULES x TIPS_PER_RULE tips) and one run log of ATTEMPTS attempts of five tips each."""
    tips, log = tmp_path / "tips.jsonl", tmp_path / "run.jsonl"
    with tips.open("w", encoding="utf-8") as fh:
        for r in range(RULES):
            for k in range(TIPS_PER_RULE):
                fh.write(json.dumps({"tip_ref": f"t{r}-{k}", "rule_id": f"rule-{r}",
                                     "body": f"Rule {r}, tip {k}."}) + "\n")
    with log.open("w", encoding="utf-8") as fh:
        for i in range(ATTEMPTS):
            rule, number = i % RULES, i // RULES + 1
            at = f"2026-11-20T{i // 60 % 24:02d}:{i % 60:02d}:00+00:00"
            fh.write(json.dumps({"type": "retrieval", "run_id": "replan-run", "rule_id": f"rule-{rule}",
                                 "attempt_number": number, "retrieved_at": at,
                                 "tips": [{"tip_ref": f"t{rule}-{(number + k) % TIPS_PER_RULE}",
                                           "similarity_score": 0.9} for k in range(5)]}) + "\n")
            fh.write(json.dumps({"type": "attempt", "run_id": "replan-run", "rule_id": f"rule-{rule}",
                                 "attempt_number": number, "started_at": at, "ended_at": at,
                                 "result": {"passed": i % 3 != 0,
                                            "failure_mode": None if i % 3 != 0 else "clean_failure"}}) + "\n")
    return tips, log


def rows_read_per_attempt(conn: psycopg.Connection, skill: str, log: Path, tip_ids: dict[str, int],
                          monkeypatch: pytest.MonkeyPatch,
                          after_attempt: tuple[int, Callable[[], None]] | None = None) -> list[int]:
    """Load the log per call in one transaction; the rows each attempt read from the skill's tables
    (all but its tips, a number the load does not change). ``after_attempt`` (n, f) calls f once
    attempt n is written."""
    counts: list[int] = []

    def rows_read() -> int:
        return int(conn.execute(
            "SELECT coalesce(sum(coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0)), 0)"
            "  FROM pg_stat_xact_user_tables WHERE schemaname = %s AND relname <> 'tips'",
            (skill,)).fetchone()[0])

    class CountingClient(Client):
        def record_outcome(self, *args: Any, **kwargs: Any) -> int:
            done = super().record_outcome(*args, **kwargs)
            counts.append(rows_read())
            if after_attempt and len(counts) == after_attempt[0]:
                after_attempt[1]()
            return done

    monkeypatch.setattr(loader, "Client", CountingClient)
    loaded = loader.load_run(conn, skill, log, tip_ids, bulk=False)
    assert [(r.attempts, r.retrievals) for r in loaded] == [(ATTEMPTS, 5 * ATTEMPTS)]
    return [b - a for a, b in zip([0, *counts], counts)]


def load(database_url: str, skill: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         after_attempt: tuple[int, Callable[[], None]] | None = None) -> tuple[float, float]:
    """Rows read per attempt by attempts 64 to 128 and by the last 64 of the per-call load."""
    tips, log = write_files(tmp_path)
    conn = psycopg.connect(database_url, autocommit=False)
    try:
        tip_ids = loader.load_tips(conn, skill, tips)
        conn.commit()
        # The tips as autovacuum leaves them soon after they are loaded: analysed, so that looking
        # one up is planned through its key (their count does not grow with the load).
        conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(skill, "tips")))
        conn.commit()
        per_attempt = rows_read_per_attempt(conn, skill, log, tip_ids, monkeypatch, after_attempt)
    finally:
        conn.close()
    return sum(per_attempt[64:128]) / 64, sum(per_attempt[-64:]) / 64


def test_per_call_load_reads_the_same_per_attempt_early_and_late(
        database_url: str, fresh_skill: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    early, late = load(database_url, fresh_skill, tmp_path, monkeypatch)
    # By the last attempts the skill holds 3,200 log rows and 640 attempts. Planned on the empty
    # partitions and never again, an attempt read 5,693 rows early and 35,393 late; planned again
    # as the load doubles, 2,340 early (the plans of attempt 64, made on a small log) and 148 late.
    assert late < 500, (early, late)


def test_a_vacuum_during_the_load_does_not_leave_it_planning_on_empty_tables(
        database_url: str, fresh_skill: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What autovacuum does on a fresh database (the deployment's checks leave dead rows): a VACUUM
    # of the skill's tables while the load's rows are uncommitted records them as holding none
    # over the pages those rows fill, and every plan made after it takes them for empty. Left so,
    # the last attempts read 12,298 rows each.
    def vacuum() -> None:
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute("SET lock_timeout = '10s'")
            for (name,) in admin.execute(
                    "SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace"
                    " WHERE n.nspname = %s AND c.relkind = 'r'", (fresh_skill,)).fetchall():
                admin.execute(sql.SQL("VACUUM {}").format(sql.Identifier(fresh_skill, name)))
            recorded = admin.execute(
                "SELECT c.reltuples, c.relpages FROM pg_class AS c"
                "  JOIN pg_namespace AS n ON n.oid = c.relnamespace"
                " WHERE n.nspname = %s AND c.relname = 'tip_retrievals'", (fresh_skill,)).fetchone()
            assert recorded[0] == 0 and recorded[1] > 0, recorded

    early, late = load(database_url, fresh_skill, tmp_path, monkeypatch, after_attempt=(100, vacuum))
    assert late < 500, (early, late)
