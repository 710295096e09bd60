"""The `ctxgraph` command as a user runs it: exit codes, the summary, and a pass killed half way."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

from judge_stub_server import StubServer, slow, verdict

from ctxgraph.cli import main


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxgraph.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)


def script(n: int) -> str:
    return f"#!/usr/bin/env bash\nset -euo pipefail\necho 'setting_{n} on' >> /etc/x.conf\n"


def test_score_prints_a_summary_and_says_the_judge_was_skipped(seed):
    run = seed([{"rule": "r1", "tips": [f"Tip {uuid.uuid4().hex}"], "script": script(1)}])
    result = run_cli("score", "--skill", "stig", "--run", run.run_id, "--log", str(run.log_path),
                     env={"CTXGRAPH_JUDGE_URL": ""})
    assert result.returncode == 0, result.stderr
    # No judge is a configuration to fix, not an answer: the row keeps its cosine and waits for a judge.
    assert "scored now: 0; left for the next pass: 1" in result.stdout
    assert "left for the next pass by reason: judge_not_configured 1" in result.stdout
    assert "judge leg skipped: no judge server" in result.stdout
    assert "1 cosines written" in result.stdout
    assert "processed" in result.stderr  # progress lines


def test_usage_errors_exit_2_with_a_clear_message(seed, tmp_path, capsys):
    run = seed([{"rule": "r1", "tips": [f"Tip {uuid.uuid4().hex}"], "script": script(1)}])
    assert main(["score", "--skill", "stig", "--run", run.run_id, "--log", str(tmp_path / "none.jsonl")]) == 2
    assert "run log not found" in capsys.readouterr().err
    assert main(["score", "--skill", "nosuch", "--run", run.run_id, "--log", str(run.log_path), "--no-embed",
                 "--no-judge"]) == 2
    assert "unknown skill 'nosuch'" in capsys.readouterr().err
    result = run_cli("score", "--skill", "stig", "--run", "x", "--log", str(run.log_path), "--concurrency", "0")
    assert result.returncode == 2 and "must be 1 or more" in result.stderr


def test_unreachable_database_exits_3(seed):
    run = seed([{"rule": "r1", "tips": [f"Tip {uuid.uuid4().hex}"], "script": script(1)}])
    result = run_cli("score", "--skill", "stig", "--run", run.run_id, "--log", str(run.log_path),
                     env={"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"})
    assert result.returncode == 3
    assert "cannot connect to the database" in result.stderr


def test_a_pass_killed_half_way_loses_nothing_and_the_next_finishes(conn, seed):
    run = seed([{"rule": f"rule_{n}", "tips": [f"Tip {n} {uuid.uuid4().hex}"], "script": script(n)}
                for n in range(24)])
    with StubServer() as server:
        server.responder = lambda request: slow(0.15, verdict(True))
        process = subprocess.Popen(
            [sys.executable, "-m", "ctxgraph.cli", "score", "--skill", "stig", "--run", run.run_id,
             "--log", str(run.log_path), "--judge-url", server.base_url, "--judge-model", "stub-model",
             "--no-embed", "--batch-size", "4", "--concurrency", "1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        stamped = 0
        while stamped < 8 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.1)
            stamped = conn.execute("SELECT count(*) FROM ctxgraph.tip_retrievals WHERE run_id = %s"
                                   " AND tip_followed_computed_at IS NOT NULL", (run.run_id,)).fetchone()[0]
            conn.commit()
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        killed_at = conn.execute("SELECT count(*) FROM ctxgraph.tip_retrievals WHERE run_id = %s"
                                 " AND tip_followed_computed_at IS NOT NULL", (run.run_id,)).fetchone()[0]
        conn.commit()
        assert 8 <= killed_at < 24 and killed_at % 4 == 0  # only whole batches were committed

        server.responder = lambda request: verdict(True)
        result = run_cli("score", "--skill", "stig", "--run", run.run_id, "--log", str(run.log_path),
                         "--judge-url", server.base_url, "--judge-model", "stub-model", "--no-embed")
    assert result.returncode == 0, result.stderr
    assert f"scored now: {24 - killed_at}" in result.stdout
    rows = conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE r.tip_followed_llm), count(DISTINCT s.retrieval_id)"
        "  FROM ctxgraph.tip_retrievals AS r JOIN ctxgraph.retrieval_scores AS s"
        "    ON s.skill = r.skill AND s.retrieval_id = r.id"
        " WHERE r.run_id = %s AND r.tip_followed_computed_at IS NOT NULL", (run.run_id,)).fetchone()
    conn.commit()
    assert rows == (24, 24, 24)
