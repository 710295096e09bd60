"""Errors as the CLI user sees them: the documented exit code and one line on stderr, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "stig"


def command_args(command: str, skill: str, tmp_path: Path) -> list[str]:
    if command == "score":
        log = tmp_path / "run.jsonl"
        log.write_text("")
        return ["score", "--skill", skill, "--run", "run-none", "--log", str(log), "--no-judge", "--no-embed",
                "--quiet"]
    if command == "load":
        return ["load", "--skill", skill, "--tips", str(SAMPLE / "tips.jsonl"), "--log", str(SAMPLE / "run-6.jsonl")]
    if command == "audit":
        return ["audit", "--skill", skill]
    return ["evaluate", "--skill", skill, "--labels", str(SAMPLE / "gold_labels.csv"), "--tips",
            str(SAMPLE / "tips.jsonl")]


COMMANDS = ["score", "load", "audit", "evaluate"]


def start(args: list[str], app: str) -> subprocess.Popen:
    env = {**os.environ, "PGAPPNAME": app, "CTXGRAPH_JUDGE_URL": ""}
    return subprocess.Popen([sys.executable, "-m", "ctxgraph.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def test_an_unknown_skill_reads_the_same_for_every_command(tmp_path: Path) -> None:
    skill = f"nosuch_{uuid.uuid4().hex[:6]}"
    messages = {}
    for command in COMMANDS:
        process = start(command_args(command, skill, tmp_path), f"ctxgraph-test-{uuid.uuid4().hex[:8]}")
        _, err = process.communicate(timeout=300)
        assert process.returncode == 2, (command, err)
        lines = err.splitlines()
        assert len(lines) == 1, (command, err)
        prefix = f"ctxgraph {command}: "
        assert lines[0].startswith(prefix), (command, err)
        messages[command] = lines[0][len(prefix):]
    assert len(set(messages.values())) == 1, messages
    assert next(iter(messages.values())).startswith(f"unknown skill '{skill}'; registered skills: ")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_database_failure_mid_command_exits_3_with_one_line(command: str, conn: psycopg.Connection,
                                                              database_url: str, tmp_path: Path) -> None:
    """The command blocks on a lock we hold on the retrieval log; then its backend is terminated."""
    skill = f"err_{uuid.uuid4().hex[:6]}"
    conn.execute("SELECT ctxgraph.add_skill(%s, 'graded')", (skill,))
    # score refuses an unknown run before it reads the log: the run exists, its retrievals are locked.
    conn.execute("INSERT INTO ctxgraph.runs (skill, id, started_at) VALUES (%s, 'run-none', now())", (skill,))
    conn.commit()
    app = f"ctxgraph-test-{uuid.uuid4().hex[:8]}"
    conn.execute("LOCK TABLE ctxgraph.tip_retrievals IN ACCESS EXCLUSIVE MODE")  # held until our rollback
    process = start(command_args(command, skill, tmp_path), app)
    # pg_stat_activity is a snapshot per transaction: watch it from a second, autocommit connection.
    try:
        with psycopg.connect(database_url, autocommit=True) as watcher:
            pid = None
            deadline = time.monotonic() + 120
            while pid is None and time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.1)
                row = watcher.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s"
                                      " AND wait_event_type = 'Lock'", (app,)).fetchone()
                pid = row[0] if row else None
            if pid is None:
                process.kill()
            assert pid is not None, f"{command} never waited on the lock: {process.communicate(timeout=30)}"
            assert watcher.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
    finally:
        conn.rollback()
    out, err = process.communicate(timeout=120)
    assert process.returncode == 3, (out, err)
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"ctxgraph {command}: database error: terminating connection"), err


def test_a_schema_without_an_object_exits_3_not_a_traceback(conn: psycopg.Connection, database_url: str,
                                                            tmp_path: Path) -> None:
    """An audit against a database whose ctxgraph schema lacks a view the files read."""
    skill = f"err_{uuid.uuid4().hex[:6]}"
    conn.execute("SELECT ctxgraph.add_skill(%s, 'graded')", (skill,))
    conn.commit()
    # The files schema-qualify every name, so the view is hidden by a committed rename (an uncommitted one
    # would only make the CLI wait on our lock), and renamed back whatever happens.
    conn.execute("ALTER VIEW ctxgraph.follow_anomalies RENAME TO follow_anomalies_hidden_by_test")
    conn.commit()
    try:
        process = start(["audit", "--skill", skill], f"ctxgraph-test-{uuid.uuid4().hex[:8]}")
        out, err = process.communicate(timeout=300)
    finally:
        conn.execute("ALTER VIEW ctxgraph.follow_anomalies_hidden_by_test RENAME TO follow_anomalies")
        conn.commit()
    assert process.returncode == 3, (out, err)
    assert err.splitlines() == [
        'ctxgraph audit: database error: relation "ctxgraph.follow_anomalies" does not exist (SQLSTATE 42P01)']


@pytest.mark.parametrize("url, message", [
    ("http://[::1/v1", "not a URL"),
    ("http://127.0.0.1:99999/v1", "port must be between 1 and 65535"),
    ("ftp://127.0.0.1/v1", "must be an http(s) base URL"),
])
def test_a_judge_url_that_cannot_be_one_is_a_usage_error(url: str, message: str, capsys) -> None:
    from ctxgraph import cli

    with pytest.raises(SystemExit) as exit_:
        cli.build_parser().parse_args(["score", "--skill", "stig", "--run", "r", "--log", "x.jsonl",
                                       "--judge-url", url])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_an_interrupted_command_says_what_it_kept(monkeypatch, capsys) -> None:
    from ctxgraph import cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setitem(cli.COMMANDS, "load", interrupted)
    assert cli.main(["load", "--skill", "stig", "--tips", "t.jsonl", "--log", "l.jsonl"]) == 130
    assert capsys.readouterr().err == ("ctxgraph load: interrupted; the files loaded before the one being read are"
                                       " kept, nothing of that one\n")


def test_a_count_past_the_database_integer_is_a_usage_error(capsys) -> None:
    from ctxgraph import cli

    with pytest.raises(SystemExit) as exit_:
        cli.build_parser().parse_args(["audit", "--skill", "stig", "--top", "99999999999999999999"])
    assert exit_.value.code == 2
    assert "must be at most 2147483647" in capsys.readouterr().err


def test_a_database_ctxgraph_was_never_deployed_to_says_so(database_url: str) -> None:
    """A database with pgvector but no ctxgraph schema: exit 3 and one line that says what to do."""
    from psycopg.conninfo import make_conninfo

    name = f"nodeploy_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        bare = make_conninfo(database_url, dbname=name)
        with psycopg.connect(bare, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
        process = subprocess.run([sys.executable, "-m", "ctxgraph.cli", "audit", "--skill", "stig"],
                                 capture_output=True, text=True, timeout=300,
                                 env={**os.environ, "DATABASE_URL": bare, "CTXGRAPH_JUDGE_URL": ""})
        assert process.returncode == 3, process.stderr
        assert process.stderr.splitlines() == [
            "ctxgraph audit: ctxgraph is not deployed in this database (no ctxgraph.skills): deploy it with sqitch first"]
    finally:
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
