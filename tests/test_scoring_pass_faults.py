"""The scoring pass under faults: writers during a pass, a kill, a server restart, bad judges, bad logs.

Each test names the failure it reproduces: the pass must hold no lock while it works, cache every
verdict as it arrives, stamp only final results, and refuse (exit 2, nothing written) what it cannot
score honestly.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from judge_stub_server import StubServer, content, http_error, slow, verdict

from ctxgraph import scoring_pass
from ctxgraph.client import Client, connect


def unique(text: str) -> str:
    return f"{text} [{uuid.uuid4().hex[:8]}]"


def script(n: int) -> str:
    return f"#!/usr/bin/env bash\nset -euo pipefail\necho 'setting_{n} on' >> /etc/x.conf\n"


def config(run, **overrides) -> scoring_pass.PassConfig:
    options = dict(skill=run.skill, run_id=run.run_id, log_path=run.log_path, batch_size=64, judge_timeout=5.0,
                   judge_retries=0, judge_backoff=0.01, use_embed=False, judge_model="stub-model")
    options.update(overrides)
    return scoring_pass.PassConfig(**options)


def judged_pass(conn, run) -> scoring_pass.PassSummary:
    with StubServer() as server:
        server.responder = lambda request: verdict(True)
        return scoring_pass.run_pass(conn, config(run, judge_url=server.base_url))


def stamped_count(database_url: str, run_id: str) -> int:
    with psycopg.connect(database_url, autocommit=True) as watcher:
        return watcher.execute("SELECT count(*) FROM ctxgraph.tip_retrievals WHERE run_id = %s"
                               " AND tip_followed_computed_at IS NOT NULL", (run_id,)).fetchone()[0]


def score_cli(*args: str, app: str | None = None) -> subprocess.Popen:
    env = {**os.environ, "CTXGRAPH_JUDGE_URL": ""}
    if app:
        env["PGAPPNAME"] = app
    return subprocess.Popen([sys.executable, "-m", "ctxgraph.cli", "score", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def wait_for(condition, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}")


# -- finding 1: no lock, no open transaction while the judge works ---------------------------------

def test_the_pass_holds_no_transaction_while_the_judge_works(conn, seed, database_url):
    run = seed([{"rule": "r", "tips": [unique("Tip.")], "script": script(n)} for n in range(3)])
    pid = conn.info.backend_pid
    seen: list[tuple[str, int]] = []

    def answer(request):
        with psycopg.connect(database_url, autocommit=True) as watcher:
            state = watcher.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0]
            locks = watcher.execute(
                "SELECT count(*) FROM pg_locks WHERE pid = %s AND locktype IN ('relation', 'tuple', 'transactionid')",
                (pid,)).fetchone()[0]
        seen.append((state, locks))
        return verdict(True)

    with StubServer() as server:
        server.responder = answer
        summary = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url, concurrency=1))
    assert summary.stamped == 3
    assert seen == [("idle", 0)] * 3


def test_a_writer_recording_an_outcome_mid_batch_completes_while_the_pass_works(conn, seed, database_url):
    run = seed([{"rule": "r", "tips": [unique("Tip A."), unique("Tip B.")], "script": script(n)} for n in range(4)])
    attempt = run.attempts[0]
    recorded: list[float] = []
    before = conn.execute("SELECT DISTINCT outcome_value FROM ctxgraph.tip_retrievals WHERE id = ANY(%s)",
                          (attempt.retrieval_ids,)).fetchall()
    conn.commit()

    def answer(request):
        if not recorded:
            # The pass is mid-batch (its judge call is open): the agent records an outcome for an
            # attempt of that batch. With row locks held by the pass, this waited for the whole batch.
            with connect(database_url) as writer:
                writer.execute("SET lock_timeout = '5s'")
                began = time.monotonic()
                Client(writer).record_outcome(run.skill, attempt.attempt_id, False, "clean_failure")
                writer.commit()
                recorded.append(time.monotonic() - began)
        return verdict(True)

    with StubServer() as server:
        server.responder = answer
        summary = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url, concurrency=1))
    assert len(recorded) == 1
    assert summary.stamped == 8
    outcome = conn.execute("SELECT DISTINCT outcome_value FROM ctxgraph.tip_retrievals WHERE id = ANY(%s)",
                           (attempt.retrieval_ids,)).fetchall()
    conn.commit()
    # The writer's outcome (a failure now) landed on every retrieval of the attempt.
    assert len(before) == 1 and len(outcome) == 1 and outcome != before


def test_a_writer_holding_the_tips_stats_never_deadlocks_with_the_write_back(conn, seed, database_url):
    """The old deadlock: the writer holds a tip's stats row (it logged a retrieval of the tip) and then
    records an outcome for a row the pass holds, while the pass's write-back waits for the stats row."""
    run = seed([{"rule": "r", "tips": [unique("Shared tip.")], "script": script(0)}])
    tip = run.attempts[0].tip_ids[0]
    attempt = run.attempts[0]
    pass_conn = connect(database_url)
    pass_pid = pass_conn.info.backend_pid
    errors: list[BaseException] = []
    results: list[scoring_pass.PassSummary] = []
    writer = connect(database_url)
    try:
        client = Client(writer)
        client.log_retrievals(run.skill, f"other-{uuid.uuid4().hex[:8]}", attempt.rule_id, [tip], [0.5],
                              attempt_time(conn, attempt.attempt_id))
        # (uncommitted: the writer now holds the tip's stats row)
        with StubServer() as server:
            server.responder = lambda request: verdict(True)

            def one_pass() -> None:
                try:
                    results.append(scoring_pass.run_pass(pass_conn, config(run, judge_url=server.base_url)))
                except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
                    errors.append(exc)

            thread = threading.Thread(target=one_pass)
            thread.start()
            with psycopg.connect(database_url, autocommit=True) as watcher:
                wait_for(lambda: watcher.execute("SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s",
                                                 (pass_pid,)).fetchone()[0], "the write-back to wait for the writer")
            client.record_outcome(run.skill, attempt.attempt_id, True)  # the row the pass is writing
            writer.commit()
            thread.join(timeout=120)
    finally:
        writer.close()
        pass_conn.close()
    assert errors == []
    assert results[0].stamped == 1


def attempt_time(conn, attempt_id: int):
    value = conn.execute("SELECT started_at FROM ctxgraph.attempts WHERE id = %s", (attempt_id,)).fetchone()[0]
    conn.commit()
    return value


# -- finding 2: every answer cached at once ----------------------------------------------------------

def test_a_pass_killed_after_some_answers_never_asks_them_again(conn, seed, database_url):
    run = seed([{"rule": f"rule_{n}", "tips": [unique(f"Tip {n}.")], "script": script(n)} for n in range(20)])
    answered: list[str] = []
    lock = threading.Lock()

    def first_pass(request):
        with lock:
            if len(answered) < 6:
                answered.append(request.messages[-1]["content"])
                return verdict(True)
        return slow(60, verdict(True))  # in flight when the pass is killed

    with StubServer() as server:
        server.responder = first_pass
        process = score_cli("--skill", "stig", "--run", run.run_id, "--log", str(run.log_path), "--judge-url",
                            server.base_url, "--judge-model", "stub-model", "--no-embed", "--concurrency", "2",
                            "--quiet")
        with psycopg.connect(database_url, autocommit=True) as watcher:
            wait_for(lambda: watcher.execute(
                "SELECT count(*) = 6 FROM ctxgraph.follow_verdicts AS v"
                "  JOIN ctxgraph.tips AS t ON v.tip_sha256 = encode(sha256(convert_to(t.body, 'UTF8')), 'hex')"
                " WHERE t.id = ANY(%s)", ([a.tip_ids[0] for a in run.attempts],)).fetchone()[0],
                "six answers in the cache")
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
    assert stamped_count(database_url, run.run_id) == 0  # the batch never reached its write-back

    asked: list[str] = []
    with StubServer() as server:
        def second_pass(request):
            with lock:
                asked.append(request.messages[-1]["content"])
            return verdict(True)

        server.responder = second_pass
        summary = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url))
    assert summary.stamped == 20 and summary.judge_cache_hits == 6
    assert len(asked) == 14 and not set(asked) & set(answered)


# -- finding 9: a server restart mid-pass, an unknown run -------------------------------------------

def test_a_server_restart_mid_pass_exits_3_with_one_line(seed, database_url):
    run = seed([{"rule": f"rule_{n}", "tips": [unique(f"Tip {n}.")], "script": script(n)} for n in range(6)])
    app = f"ctxgraph-restart-{uuid.uuid4().hex[:8]}"
    done = threading.Event()

    def answer(request):
        if not done.is_set():
            done.set()
            # What a restart does to the pass's session: the server ends it.
            with psycopg.connect(database_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                              (app,))
        return verdict(True)

    with StubServer() as server:
        server.responder = answer
        process = score_cli("--skill", "stig", "--run", run.run_id, "--log", str(run.log_path), "--judge-url",
                            server.base_url, "--judge-model", "stub-model", "--no-embed", "--concurrency", "1",
                            "--quiet", app=app)
        out, err = process.communicate(timeout=120)
    assert process.returncode == 3, (out, err)
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctxgraph score: database error: "), err
    assert stamped_count(database_url, run.run_id) == 0


def test_an_unknown_run_is_a_usage_error(seed):
    run = seed([{"rule": "r", "tips": [unique("Tip.")], "script": script(0)}])
    process = score_cli("--skill", "stig", "--run", "nosuchrun", "--log", str(run.log_path), "--no-judge",
                        "--no-embed", "--quiet")
    out, err = process.communicate(timeout=120)
    assert process.returncode == 2, (out, err)
    assert err.splitlines() == ["ctxgraph score: no run 'nosuchrun' in skill stig"]


# -- finding 3: honest stamps ---------------------------------------------------------------------

def test_another_runs_log_is_refused_and_writes_nothing(conn, seed, database_url):
    run6 = seed([{"rule": "r", "tips": [unique("Tip.")], "script": script(n)} for n in range(3)])
    run7 = seed([{"rule": "r", "tips": [unique("Tip.")], "script": script(n)} for n in range(3)])
    process = score_cli("--skill", "stig", "--run", run6.run_id, "--log", str(run7.log_path), "--no-judge",
                        "--no-embed", "--quiet")
    out, err = process.communicate(timeout=120)
    assert process.returncode == 2, (out, err)
    assert "matches none of the attempts of run" in err and "nothing was written" in err
    written = conn.execute("SELECT count(*) FROM ctxgraph.retrieval_scores WHERE retrieval_id = ANY(%s)",
                           (run6.retrieval_ids,)).fetchone()[0]
    conn.commit()
    assert written == 0
    summary = judged_pass(conn, run6)
    assert summary.stamped == 3 and summary.llm_written == 3


@pytest.mark.parametrize("status", [401, 403, 404])
def test_a_misconfigured_judge_leaves_every_row_for_the_next_pass(conn, seed, status):
    run = seed([{"rule": "r", "tips": [unique("Tip.")], "script": script(n)} for n in range(5)])
    with StubServer() as server:
        server.responder = lambda request: http_error(status, "no such model")
        first = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url, concurrency=1))
        asked = len(server.chat_requests())
    assert first.stamped == 0 and first.retry_reasons == {"judge_config": 5}
    assert asked == 1  # the first refusal stops the leg: every question would fail the same way
    assert "refused the pass's configuration" in first.render()
    with StubServer() as server:
        server.responder = lambda request: verdict(True)
        second = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url))
        assert len(server.chat_requests()) == 5
    assert second.stamped == 5 and second.llm_written == 5


def test_no_judge_url_leaves_the_rows_unscored(conn, seed):
    run = seed([{"rule": "r", "tips": [unique("Tip.")], "script": script(0)}])
    summary = scoring_pass.run_pass(conn, config(run, judge_url=None))
    assert summary.stamped == 0 and summary.retry_reasons == {"judge_not_configured": 1}


def test_a_truncated_last_line_leaves_its_rows_for_the_next_pass(conn, seed, tmp_path: Path):
    run = seed([{"rule": "r", "tips": [unique("Tip.")], "script": script(n)} for n in range(3)])
    whole = run.log_path.read_text(encoding="utf-8")
    lines = whole.splitlines()
    run.log_path.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2], encoding="utf-8")
    first = judged_pass(conn, run)
    assert first.stamped == 2 and first.retry_reasons == {"no_script": 1} and first.log_problems
    run.log_path.write_text(whole, encoding="utf-8")
    second = judged_pass(conn, run)
    assert second.stamped == 1 and second.llm_written == 1


def test_rescore_scores_again_the_rows_stamped_for_a_reason(conn, seed):
    run = seed([{"rule": "r", "tips": [unique("Tip.")], "script": script(n)} for n in range(3)])
    with StubServer() as server:
        server.responder = lambda request: content("no idea")
        first = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url, judge_model="model-a"))
    assert first.stamped == 3 and first.llm_status == {"unparseable": 3}
    # The same model and prompt: the cached answer stands, nothing is asked.
    with StubServer() as server:
        server.responder = lambda request: pytest.fail("a cached answer was asked again")
        same = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url, judge_model="model-a",
                                                  rescore=("unparseable",)))
    assert same.unscored_before == 3 and same.stamped == 3 and same.judge_cache_hits == 3
    # A judge down while re-scoring keeps the old stamps rather than unstamping them.
    with StubServer() as server:
        server.responder = lambda request: http_error(503)
        down = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url, judge_model="model-b",
                                                  rescore=("unparseable",)))
    assert down.stamped == 0 and down.kept == 3
    with StubServer() as server:
        server.responder = lambda request: verdict(True)
        again = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url, judge_model="model-b",
                                                   rescore=("unparseable",)))
    assert again.stamped == 3 and again.rescored == 3 and again.llm_written == 3
    rows = conn.execute("SELECT DISTINCT r.tip_followed_llm, s.llm_status, s.judge_model FROM ctxgraph.tip_retrievals r"
                        " JOIN ctxgraph.retrieval_scores s ON s.skill = r.skill AND s.retrieval_id = r.id"
                        " WHERE r.id = ANY(%s)", (run.retrieval_ids,)).fetchall()
    conn.commit()
    assert rows == [(True, "judged", "model-b")]
    after = scoring_pass.run_pass(conn, config(run, judge_url=None, rescore=("unparseable",)))
    assert after.unscored_before == 0


def test_an_unknown_rescore_reason_is_a_usage_error(seed):
    run = seed([{"rule": "r", "tips": [unique("Tip.")], "script": script(0)}])
    process = score_cli("--skill", "stig", "--run", run.run_id, "--log", str(run.log_path), "--no-judge",
                        "--no-embed", "--quiet", "--rescore", "judged,bogus")
    out, err = process.communicate(timeout=120)
    assert process.returncode == 2, (out, err)
    assert len(err.splitlines()) == 1 and "unknown rescore reason bogus" in err


# -- deliverable 1: two passes, a kill, writers, all at once ---------------------------------------

def test_two_passes_and_writers_at_once_score_every_row_once(seed, database_url):
    run = seed([{"rule": f"rule_{n % 5}", "tips": [unique(f"Tip {n}."), unique(f"Other {n}.")], "script": script(n)}
                for n in range(24)])
    calls: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()
    writer_errors: list[BaseException] = []

    def answer(request):
        with lock:
            calls.append(request.messages[-1]["content"])
        return slow(0.01, verdict(True))

    def agent(which: int) -> None:
        # Outcomes recorded over and over for the run's attempts (this agent's half of them) while
        # both passes work on them.
        mine = run.attempts[which::2]
        with connect(database_url) as writer:
            writer.execute("SET lock_timeout = '10s'")
            n = 0
            while not stop.is_set():
                attempt = mine[n % len(mine)]
                try:
                    Client(writer).record_outcome(run.skill, attempt.attempt_id, n % 2 == 0,
                                                  None if n % 2 == 0 else "clean_failure")
                    writer.commit()
                except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
                    writer_errors.append(exc)
                    writer.rollback()
                n += 1

    results: list[scoring_pass.PassSummary] = []
    pass_errors: list[BaseException] = []
    with StubServer() as server:
        server.responder = answer

        def one_pass() -> None:
            connection = connect(database_url)
            try:
                results.append(scoring_pass.run_pass(connection, config(
                    run, judge_url=server.base_url, batch_size=6, concurrency=2)))
            except BaseException as exc:  # noqa: BLE001
                pass_errors.append(exc)
            finally:
                connection.close()

        writers = [threading.Thread(target=agent, args=(k,)) for k in range(2)]
        passes = [threading.Thread(target=one_pass) for _ in range(2)]
        for thread in writers + passes:
            thread.start()
        for thread in passes:
            thread.join(timeout=300)
        stop.set()
        for thread in writers:
            thread.join(timeout=60)
    assert pass_errors == [] and writer_errors == []
    assert sum(r.stamped for r in results) == 48
    assert len(calls) == 48 == len(set(calls))
    assert stamped_count(database_url, run.run_id) == 48
    assert [r.taken_by_others for r in results] == [0, 0]


# -- deliverable 1: a batch slower than its lease keeps it -----------------------------------------

@pytest.fixture
def two_second_leases(database_url):
    """scoring.lease_seconds = 2 for one test, put back afterwards."""
    with psycopg.connect(database_url, autocommit=True) as admin:
        old = admin.execute("SELECT value FROM ctxgraph.parameters WHERE name = 'scoring.lease_seconds'").fetchone()[0]
        admin.execute("UPDATE ctxgraph.parameters SET value = 2 WHERE name = 'scoring.lease_seconds'")
    try:
        yield
    finally:
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute("UPDATE ctxgraph.parameters SET value = %s WHERE name = 'scoring.lease_seconds'", (old,))


@pytest.mark.parametrize("renew_every, asked_twice", [(0.4, False), (600.0, True)],
                         ids=["renewed", "not-renewed-in-time"])
def test_a_batch_slower_than_its_lease_is_not_taken_over(seed, database_url, two_second_leases,
                                                         renew_every, asked_twice):
    # One batch of 12 rows, one question at a time, 0.5 s each: the batch takes 6 s, a lease 2 s.
    # A second pass starts once the first has asked 6 questions (2.5 s after its claim). Unrenewed,
    # the leases have expired: the second pass takes the rows over and asks again what the first has
    # not answered yet (the control). Renewed every 0.4 s, it finds nothing to claim.
    run = seed([{"rule": "r", "tips": [unique(f"Tip {n}.")], "script": script(n)} for n in range(12)])
    calls: list[str] = []
    lock = threading.Lock()

    def answer(request):
        with lock:
            calls.append(request.messages[-1]["content"])
        return slow(0.5, verdict(True))

    results: list[scoring_pass.PassSummary] = []
    errors: list[BaseException] = []
    with StubServer() as server:
        server.responder = answer

        def one_pass() -> None:
            connection = connect(database_url)
            try:
                results.append(scoring_pass.run_pass(connection, config(
                    run, judge_url=server.base_url, batch_size=12, concurrency=1, lease_renew_seconds=renew_every)))
            except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
                errors.append(exc)
            finally:
                connection.close()

        first = threading.Thread(target=one_pass)
        first.start()
        wait_for(lambda: len(calls) >= 6, "the first pass's sixth question")
        second = threading.Thread(target=one_pass)
        second.start()
        first.join(timeout=120)
        second.join(timeout=120)
    assert errors == []
    assert stamped_count(database_url, run.run_id) == 12
    assert (len(calls) > len(set(calls))) is asked_twice
    if not asked_twice:
        assert sorted(r.stamped for r in results) == [0, 12]
        assert max(r.lease_renewals for r in results) >= 5


# -- issue 44, finding 4: a judge's answers and the reasoning stored are bounded ------------------

def stored_reasoning(conn, run) -> list[tuple[bool | None, int | None, str | None]]:
    """(followed, length of the reasoning, error) of every cached answer about the run's tips."""
    rows = conn.execute(
        "SELECT v.followed, length(v.reasoning), v.error FROM ctxgraph.follow_verdicts AS v"
        "  JOIN ctxgraph.tips AS t ON v.tip_sha256 = encode(sha256(convert_to(t.body, 'UTF8')), 'hex')"
        " WHERE t.id = ANY(%s) ORDER BY 1, 2, 3", ([a.tip_ids[0] for a in run.attempts],)).fetchall()
    conn.commit()
    return rows


def huge_verdict(reasoning_bytes: int):
    """A valid chat completion whose verdict's reasoning is ``reasoning_bytes`` of 'x', streamed as it is made."""
    from judge_stub_server import Streamed, completion

    head, tail = json.dumps(completion("\x00")).split('"\\u0000"')

    def chunks():
        yield (head + json.dumps('{"followed": true, "reasoning": "')[:-1]).encode()
        for _ in range(reasoning_bytes // 65536):
            yield b"x" * 65536
        yield (json.dumps('"}')[1:] + tail).encode()

    return Streamed(chunks)


def test_a_judge_answering_huge_verdicts_stores_bounded_reasoning(conn, seed):
    # A valid verdict whose reasoning is 20 MB (past the answer limit) is refused unread, as an answer
    # that is no verdict the pass can take; one of 300 kB (within it) is kept, its reasoning cut to
    # the stated length before it is written.
    run = seed([{"rule": "r", "tips": [unique(f"Tip {n}.")], "script": script(n)} for n in range(4)])

    def answer(request):
        user = request.messages[-1]["content"]
        if "echo 'setting_0" in user or "echo 'setting_1" in user:
            return huge_verdict(20 * 1024 * 1024)
        return verdict(False, "y" * 300_000)

    with StubServer() as server:
        server.responder = answer
        summary = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url, concurrency=1))
        asked = len(server.chat_requests())
        streamed = server.streamed_bytes
    assert asked == 4  # refused answers are not asked again within the pass
    assert streamed < 2 * 20 * 1024 * 1024  # both huge answers were cut off mid-way
    assert summary.stamped == 4 and summary.llm_status == {"unparseable": 2, "judged": 2}
    assert stored_reasoning(conn, run) == [(False, 4000, None), (False, 4000, None),
                                           (None, None, "unparseable"), (None, None, "unparseable")]


# -- issue 44, finding 11: a judge failing every question is given up on for the pass --------------

def test_a_judge_answering_500_to_everything_is_given_up_on_and_the_rows_left_for_the_next_pass(conn, seed):
    run = seed([{"rule": "r", "tips": [unique(f"Tip {n}.")], "script": script(n)} for n in range(20)])
    with StubServer() as server:
        server.responder = lambda request: http_error(500, "internal error")
        first = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url, concurrency=1, judge_retries=1))
        asked = len(server.chat_requests())
    # The default: 8 questions in a row failed after their retries (2 requests each), then nothing more.
    assert asked == 8 * 2  # asking every question: 20 * 2
    assert first.stamped == 0 and first.retry_reasons == {"http_error": 20}
    assert "gave up on the judge" in first.render() and "HTTP 500" in first.render()
    with StubServer() as server:
        server.responder = lambda request: verdict(True)
        second = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url))
        assert len(server.chat_requests()) == 20
    assert second.stamped == 20 and second.llm_written == 20


def test_giving_up_on_the_judge_holds_across_batches_and_concurrent_questions(conn, seed):
    run = seed([{"rule": "r", "tips": [unique(f"Tip {n}.")], "script": script(n)} for n in range(30)])
    with StubServer() as server:
        server.responder = lambda request: http_error(503)
        summary = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url, concurrency=4, batch_size=2,
                                                     judge_give_up_after=3))
        asked = len(server.chat_requests())
    # Two failures in the first batch, a third in the second: the pass stops asking; the question
    # then in flight beside it is abandoned, not finished.
    assert asked <= 3 + 1
    assert summary.stamped == 0 and summary.retry_reasons == {"http_error": 30}
    assert summary.judge_given_up is not None and "3 questions in a row" in summary.judge_given_up


def test_failures_that_are_not_in_a_row_do_not_stop_the_judge(conn, seed):
    run = seed([{"rule": "r", "tips": [unique(f"Tip {n}.")], "script": script(n)} for n in range(12)])
    count = iter(range(1000))
    with StubServer() as server:
        server.responder = lambda request: http_error(500) if next(count) % 2 else verdict(True)
        summary = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url, concurrency=1,
                                                     judge_give_up_after=2))
        asked = len(server.chat_requests())
    assert asked == 12 and summary.judge_given_up is None
    assert summary.stamped == 6 and summary.retry_reasons == {"http_error": 6}
    assert "gave up on the judge" not in summary.render()


def test_a_judge_given_up_on_while_rescoring_keeps_the_old_stamps(conn, seed):
    run = seed([{"rule": "r", "tips": [unique(f"Tip {n}.")], "script": script(n)} for n in range(5)])
    with StubServer() as server:
        server.responder = lambda request: content("no idea")
        scoring_pass.run_pass(conn, config(run, judge_url=server.base_url, judge_model="model-a"))
    with StubServer() as server:
        server.responder = lambda request: http_error(502)
        down = scoring_pass.run_pass(conn, config(run, judge_url=server.base_url, judge_model="model-b",
                                                  rescore=("unparseable",), concurrency=1, judge_give_up_after=2))
        asked = len(server.chat_requests())
    assert asked == 2 and down.stamped == 0 and down.kept == 5
