"""ctxgraph.client.Client: one call per public SQL function, on a connection the caller owns."""

from __future__ import annotations

import ast
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from ctxgraph.client import Client

PACKAGE = Path(__file__).resolve().parent.parent / "scorer" / "ctxgraph"
#: The modules that execute SQL, as paths in the package: the public Client (ctxgraph.client), and the
#: stores, each named *_store.py beside the code it serves (ctxgraph.fit's is fit/store.py).
SQL_MODULES = frozenset({
    "client.py",
    "connection_store.py",
    "scoring_store.py",
    "simulate_store.py",
    "audit_store.py",
    "fit/store.py",
})
T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)


def new_tips(conn: psycopg.Connection, rule: str, n: int) -> list[int]:
    return [conn.execute("INSERT INTO stig.tips (rule_id, body) VALUES (%s, %s) RETURNING id",
                         (rule, f"Tip {i} {uuid.uuid4().hex}")).fetchone()[0] for i in range(n)]


def test_the_write_path_round_trip(conn: psycopg.Connection) -> None:
    client = Client(conn)
    run, rule = f"run-{uuid.uuid4().hex[:8]}", f"rule_{uuid.uuid4().hex[:8]}"
    tips = new_tips(conn, rule, 3)
    ids = client.log_retrievals("stig", run, rule, tips, [0.9, 0.8, 0.7], T0)
    assert len(ids) == 3 and len(set(ids)) == 3
    attempt = client.save_attempt("stig", run, rule, 2, "drop-in", T0 + timedelta(seconds=5), T0 + timedelta(minutes=1))
    assert client.update_retrieval_attempt_ids("stig", ids, attempt) == 3
    assert client.record_outcome("stig", attempt, True) == 3
    rows = conn.execute("SELECT id, tip_id, rank, attempt_id, outcome_value, retrieved_at FROM stig.tip_retrievals"
                        " WHERE id = ANY (%s) ORDER BY rank", (ids,)).fetchall()
    assert [r[0] for r in rows] == ids  # ids come back in rank order
    assert [r[1] for r in rows] == tips
    assert {(r[3], r[4], r[5]) for r in rows} == {(attempt, 0.8, T0)}  # pass on attempt 2: 0.8
    approach = conn.execute("SELECT approach FROM stig.attempts WHERE id = %s", (attempt,)).fetchone()[0]
    assert approach == "drop-in"
    conn.rollback()


def test_an_omitted_optional_argument_takes_the_sql_default(conn: psycopg.Connection) -> None:
    client = Client(conn)
    run, rule = f"run-{uuid.uuid4().hex[:8]}", f"rule_{uuid.uuid4().hex[:8]}"
    (tip,) = new_tips(conn, rule, 1)
    (rid,) = client.log_retrievals("stig", run, rule, [tip], [0.5])  # retrieved_at DEFAULT now()
    at, now = conn.execute("SELECT retrieved_at, now() FROM stig.tip_retrievals WHERE id = %s", (rid,)).fetchone()
    assert at == now
    conn.rollback()


def test_sql_errors_keep_their_sqlstate(conn: psycopg.Connection) -> None:
    client = Client(conn)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="unknown failure mode"):
        client.graded_outcome("stig", False, 1, "no_such_mode")
    conn.rollback()
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        client.save_attempt("no_such_skill", "r", "x", 1)
    conn.rollback()
    with pytest.raises(psycopg.errors.NoDataFound):
        client.record_outcome("stig", -1, True)
    conn.rollback()


def test_scoring_semantics(conn: psycopg.Connection) -> None:
    client = Client(conn)
    assert client.graded_outcome("stig", True, 1) == 1.0
    assert client.graded_outcome("stig", True, 3) == 0.8
    assert client.graded_outcome("stig", False, 2, "health_failure") == -0.2
    assert client.graded_outcome("cve", True, 7) == 1.0
    assert client.follow_weight(True, 0.1) == 1.0
    assert client.follow_weight(False, 0.9) == 0.0
    assert client.follow_weight(None, 0.7) == 1.0
    assert client.follow_weight(None, float("nan")) == 0.5
    assert client.tip_followed(None, 0.1) is False
    assert client.tip_followed(None, None) is None
    conn.rollback()


def test_consumer_reads(conn: psycopg.Connection, seed) -> None:
    rule = f"rule_{uuid.uuid4().hex[:8]}"
    run = seed([{"rule": rule, "tips": ["Tip A " + uuid.uuid4().hex, "Tip B " + uuid.uuid4().hex], "passed": True}])
    client = Client(conn)
    tip_a, tip_b = run.attempts[0].tip_ids
    rates = client.tip_hit_rates("stig", [tip_b, tip_a, -1])
    assert [r["tip_id"] for r in rates] == sorted([tip_a, tip_b])
    assert all(r["retrievals"] == 1 and r["outcome_hit_rate"] == 1.0 for r in rates)
    ranking = client.rule_ranking("stig", rule)
    assert {r["tip_id"] for r in ranking} == {tip_a, tip_b}
    for read in (client.misleading_tips, client.harmful_tips, client.eviction_candidates, client.tip_evidence,
                 client.evict_tips):
        rows = read("stig")
        assert isinstance(rows, list) and all(isinstance(r, dict) for r in rows)
    evidence = {r["tip_id"]: r for r in client.tip_evidence("stig", T0 + timedelta(days=365))}
    assert evidence[tip_a]["attempts"] == 1
    metrics = client.follow_label_metrics("stig", run.retrieval_ids, [True, False])
    assert [m["leg"] for m in metrics] == ["judge", "embedding"] and metrics[0]["labelled"] == 2
    assert client.restore_tip("stig", tip_a) is False  # never retired
    conn.rollback()


def test_per_skill_views_are_quoted_identifiers_not_pasted_text(conn: psycopg.Connection) -> None:
    with pytest.raises(psycopg.errors.UndefinedTable):
        Client(conn).misleading_tips('stig"; DROP TABLE stig.tips; --')
    conn.rollback()
    assert conn.execute("SELECT to_regclass('stig.tips') IS NOT NULL").fetchone()[0]
    conn.rollback()


def test_only_the_sql_module_executes_statements() -> None:
    """ALL SQL in the package goes through the SQL modules (SQL_MODULES: ctxgraph.client and the *_store.py
    stores, ctxgraph.fit's store.py for the fit): no other module calls .execute / .executemany / .copy /
    .cursor."""
    modules = {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")}
    assert SQL_MODULES <= modules  # the list names modules that exist
    assert all(m == "client.py" or m.endswith("store.py") for m in SQL_MODULES)  # and keeps the layout
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).as_posix() in SQL_MODULES:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in {"execute", "executemany", "copy", "cursor"}:
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} .{node.attr}")
    assert offenders == []


def test_scored_retrievals(conn: psycopg.Connection, seed) -> None:
    run = seed([{"rule": f"rule_{uuid.uuid4().hex[:8]}", "tips": [f"Tip {uuid.uuid4().hex}"], "passed": True},
                {"rule": f"rule_{uuid.uuid4().hex[:8]}", "tips": [f"Tip {uuid.uuid4().hex}"], "passed": False,
                 "failure_mode": "health_failure"}])
    rows = Client(conn).scored_retrievals("stig", run.run_id)
    assert [r["retrieval_id"] for r in rows] == sorted(run.retrieval_ids)
    assert {"retrieval_id", "tip_id", "attempt_key", "run_id", "rule_id", "credit", "followed", "follow_weight",
            "follow_source", "harmful"} <= set(rows[0])
    assert [r["credit"] for r in rows] == [1.0, -0.2]
    conn.rollback()


def test_ingest_run_log_writes_staged_lines_and_keeps_the_sqlstate(conn: psycopg.Connection) -> None:
    client = Client(conn)
    run, rule = f"run-{uuid.uuid4().hex[:8]}", f"rule_{uuid.uuid4().hex[:8]}"
    tips = new_tips(conn, rule, 2)
    lines = [(1, "retrieval", run, rule, 1, T0, tips, [0.9, None], None, None, None, None, None),
             (2, "attempt", run, rule, 1, None, None, None, "drop-in", T0, T0 + timedelta(minutes=1), False,
              "health_failure")]
    assert client.ingest_run_log("stig", lines) == [{"run_id": run, "attempts": 1, "retrievals": 2}]
    rows = conn.execute("SELECT r.tip_id, r.rank, r.similarity_score, r.outcome_value, a.attempt_number, a.approach"
                        " FROM stig.tip_retrievals AS r JOIN stig.attempts AS a ON a.id = r.attempt_id"
                        " WHERE r.run_id = %s ORDER BY r.id", (run,)).fetchall()
    assert rows == [(tips[0], 1, 0.9, -0.2, 1, "drop-in"), (tips[1], 2, None, -0.2, 1, "drop-in")]
    conn.rollback()
    bad = [(7, "retrieval", run, rule, 1, T0, [tips[0], tips[0]], [0.9, 0.8], None, None, None, None, None)]
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="run log line 7: a tip appears twice"):
        client.ingest_run_log("stig", bad)
    conn.rollback()
