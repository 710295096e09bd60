"""Writers never fail each other on a deadlock.

The tip_stats triggers lock each touched tip's stats row until the transaction ends, in tip order
within one statement. A transaction of several statements takes them in the order its statements
come: two writers logging tips X then Y and Y then X wait for each other and PostgreSQL aborts one
(40P01). The bulk load writes a file's retrievals in one statement, so crossing files cannot
deadlock there; the per-call path cannot be ordered, and ``run_in_transaction`` (the loader's
transaction) runs an aborted unit again. Each test commits its rows on unique runs and tips.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import errors

from ctxgraph import loader
from ctxgraph.client import Client, connect, run_in_transaction

from conftest import BASE_TIME

SKILL = "stig"
TRIALS = 10


@pytest.fixture
def connections(database_url: str) -> Iterator[Callable[[str], psycopg.Connection]]:
    """Open committed-idle connections with a given deadlock_timeout; all closed at the end."""
    opened: list[psycopg.Connection] = []

    def _open(deadlock_timeout: str = "100ms") -> psycopg.Connection:
        conn = connect(database_url)
        conn.execute(f"SET deadlock_timeout = '{deadlock_timeout}'")
        conn.commit()
        opened.append(conn)
        return conn

    yield _open
    for conn in opened:
        conn.rollback()
        conn.close()


def new_tips(conn: psycopg.Connection, rule: str, n: int) -> list[int]:
    ids = [conn.execute("INSERT INTO ctxgraph.tips (skill, rule_id, body) VALUES (%s, %s, %s) RETURNING id",
                        (SKILL, rule, f"deadlock tip {uuid.uuid4().hex}")).fetchone()[0] for _ in range(n)]
    conn.execute("SELECT ctxgraph.refresh_tip_stats(%s, %s)", (SKILL, ids))
    conn.commit()
    return ids


def in_threads(*jobs: Callable[[], object]) -> list[BaseException | None]:
    """Run the jobs at once; return each one's exception (None when it returned)."""
    outcomes: list[BaseException | None] = [None] * len(jobs)

    def run(i: int) -> None:
        try:
            jobs[i]()
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            outcomes[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive(), "a writer hung"
    return outcomes


def crossing_writer(conn: psycopg.Connection, run_id: str, rule: str, first: int, second: int,
                    barrier: threading.Barrier, tries: list[int], deadlock_retries: int) -> Callable[[], None]:
    """Log ``first`` then ``second`` in one transaction; the first try meets the other writer in between."""
    client = Client(conn)

    def unit() -> None:
        tries.append(1)
        client.log_retrievals(SKILL, run_id, rule, [first], [0.5], BASE_TIME)
        if len(tries) == 1:
            barrier.wait(timeout=20)
        client.log_retrievals(SKILL, run_id, rule, [second], [0.5], BASE_TIME)

    return lambda: run_in_transaction(conn, unit, deadlock_retries=deadlock_retries)


def stats_match_the_log(conn: psycopg.Connection, tip_ids: list[int]) -> list[tuple]:
    """Tips whose maintained retrieval count or latest retrieval differs from the log."""
    return conn.execute(
        """
        SELECT s.tip_id, s.retrievals, l.n
          FROM ctxgraph.tip_stats AS s
          JOIN LATERAL (SELECT count(*) AS n, max(r.retrieved_at) AS latest FROM ctxgraph.tip_retrievals AS r
                         WHERE r.skill = s.skill AND r.tip_id = s.tip_id) AS l ON true
         WHERE s.skill = %s AND s.tip_id = ANY (%s)
           AND (s.retrievals <> l.n OR s.last_retrieved_at IS DISTINCT FROM l.latest)
        """,
        (SKILL, tip_ids),
    ).fetchall()


def test_crossing_per_call_writers_deadlock_without_the_retry(connections) -> None:
    """The finding: X then Y against Y then X in two transactions is 40P01 for one of them."""
    a, b = connections(), connections()
    rule = f"rule_{uuid.uuid4().hex[:8]}"
    x, y = new_tips(a, rule, 2)
    barrier = threading.Barrier(2)
    outcomes = in_threads(
        crossing_writer(a, f"run-{uuid.uuid4().hex[:8]}", rule, x, y, barrier, [], deadlock_retries=0),
        crossing_writer(b, f"run-{uuid.uuid4().hex[:8]}", rule, y, x, barrier, [], deadlock_retries=0),
    )
    assert sorted(type(o).__name__ for o in outcomes) == ["DeadlockDetected", "NoneType"]


def test_crossing_per_call_writers_both_commit_with_the_retry(connections) -> None:
    """Over many trials every crossing deadlocks, its victim runs again, and both commit."""
    a, b = connections(), connections()
    started = time.monotonic()
    for trial in range(TRIALS):
        rule = f"rule_{uuid.uuid4().hex[:8]}"
        x, y = new_tips(a, rule, 2)
        runs = [f"run-{uuid.uuid4().hex[:8]}", f"run-{uuid.uuid4().hex[:8]}"]
        barrier = threading.Barrier(2)
        tries_a: list[int] = []
        tries_b: list[int] = []
        outcomes = in_threads(crossing_writer(a, runs[0], rule, x, y, barrier, tries_a, deadlock_retries=3),
                              crossing_writer(b, runs[1], rule, y, x, barrier, tries_b, deadlock_retries=3))
        assert outcomes == [None, None], f"trial {trial}: {outcomes}"
        assert len(tries_a) + len(tries_b) >= 3, f"trial {trial}: the crossing deadlocked and was run again"
        logged = a.execute("SELECT run_id, array_agg(tip_id ORDER BY id) FROM ctxgraph.tip_retrievals"
                           " WHERE skill = %s AND run_id = ANY (%s) GROUP BY run_id ORDER BY run_id",
                           (SKILL, runs)).fetchall()
        assert dict(logged) == {runs[0]: [x, y], runs[1]: [y, x]}, "each transaction's rows once, none of the aborted try"
        assert stats_match_the_log(a, [x, y]) == []
        a.rollback()
    print(f"\n{TRIALS} crossing trials with the retry: {time.monotonic() - started:.2f} s")


def write_log(path: Path, run_id: str, rule: str, refs: list[str]) -> Path:
    lines = [{"type": "retrieval", "run_id": run_id, "rule_id": rule, "attempt_number": 1,
              "retrieved_at": BASE_TIME.isoformat(), "tips": [{"tip_ref": ref, "similarity_score": 0.5}]}
             for ref in refs]
    lines.append({"type": "attempt", "run_id": run_id, "rule_id": rule, "attempt_number": 1,
                  "result": {"passed": False, "failure_mode": "clean_failure"}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_crossing_bulk_loads_never_deadlock(connections, tmp_path: Path) -> None:
    """A bulk load writes its retrievals in one statement, whose triggers lock tips in tip order."""
    a, b = connections(), connections()
    for trial in range(TRIALS):
        rule = f"rule_{uuid.uuid4().hex[:8]}"
        x, y = new_tips(a, rule, 2)
        tips = {"x": x, "y": y}
        runs = [f"run-{uuid.uuid4().hex[:8]}", f"run-{uuid.uuid4().hex[:8]}"]
        logs = [write_log(tmp_path / f"{runs[0]}.jsonl", runs[0], rule, ["x", "y"]),
                write_log(tmp_path / f"{runs[1]}.jsonl", runs[1], rule, ["y", "x"])]
        barrier = threading.Barrier(2)

        def load(conn: psycopg.Connection, log: Path) -> Callable[[], object]:
            def job() -> object:
                barrier.wait(timeout=20)
                return loader.load_run(conn, SKILL, log, tips, deadlock_retries=0)
            return job

        assert in_threads(load(a, logs[0]), load(b, logs[1])) == [None, None], f"trial {trial}"
        assert stats_match_the_log(a, [x, y]) == []
        a.rollback()


def test_a_per_call_load_aborted_by_a_deadlock_is_loaded_again(connections, tmp_path: Path) -> None:
    """Deterministic: another session holds Y's stats row, the load logs X and waits for Y, the session
    then asks for X. The load (the shorter deadlock_timeout) is the victim; it is run again and loads."""
    holder, load_conn = connections("30s"), connections("1s")
    rule = f"rule_{uuid.uuid4().hex[:8]}"
    x, y = new_tips(holder, rule, 2)
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    log = write_log(tmp_path / f"{run_id}.jsonl", run_id, rule, ["x", "y"])
    holder.execute("SELECT 1 FROM ctxgraph.tip_stats WHERE skill = %s AND tip_id = %s FOR UPDATE", (SKILL, y))
    loaded: list[object] = []
    thread = threading.Thread(target=lambda: loaded.append(
        loader.load_run(load_conn, SKILL, log, {"x": x, "y": y}, bulk=False)))
    thread.start()
    pid = load_conn.info.backend_pid
    deadline = time.monotonic() + 20
    while holder.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                         (pid,)).fetchone()[0] != "Lock":
        assert time.monotonic() < deadline, "the load never waited for Y"
        time.sleep(0.01)
    holder.execute("SELECT 1 FROM ctxgraph.tip_stats WHERE skill = %s AND tip_id = %s FOR UPDATE", (SKILL, x))
    holder.commit()
    thread.join(timeout=60)
    assert loaded == [[loader.RunLoaded(run_id, 1, 2)]]
    rows = holder.execute("SELECT tip_id, outcome_value FROM ctxgraph.tip_retrievals WHERE skill = %s AND run_id = %s"
                          " ORDER BY id", (SKILL, run_id)).fetchall()
    assert rows == [(x, 0.0), (y, 0.0)]
    assert stats_match_the_log(holder, [x, y]) == []


def test_the_retry_runs_only_a_transaction_it_owns(connections) -> None:
    """Inside a transaction the caller holds, earlier locks would survive a retry: the deadlock is raised."""
    conn = connections()
    calls: list[int] = []

    def deadlocks_once() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise errors.DeadlockDetected("deadlock detected")
        return "done"

    assert run_in_transaction(conn, deadlocks_once) == "done" and len(calls) == 2
    calls.clear()
    conn.execute("SELECT 1")  # the caller's transaction is open
    with pytest.raises(errors.DeadlockDetected):
        run_in_transaction(conn, deadlocks_once)
    assert len(calls) == 1
    conn.rollback()
    calls.clear()

    def always_deadlocks() -> None:
        calls.append(1)
        raise errors.DeadlockDetected("deadlock detected")

    with pytest.raises(errors.DeadlockDetected):
        run_in_transaction(conn, always_deadlocks, deadlock_retries=2)
    assert len(calls) == 3


def maintained_levels(conn: psycopg.Connection, tip_ids: list[int]) -> list[tuple]:
    """The tips' maintained figures at every level eviction and the ranker read, floats to 9 places."""
    rows: list[tuple] = []
    for query in (
        "SELECT tip_id, retrievals, scored, attempts, outcome_sum, weighted_sum, follow_known, followed, harm, runs"
        "  FROM ctxgraph.tip_stats WHERE skill = %s AND tip_id = ANY (%s)",
        "SELECT tip_id, attempt_key, scored, outcome_sum, weighted_sum, weight_sum, follow_known, followed, harm"
        "  FROM ctxgraph.tip_attempt_stats WHERE skill = %s AND tip_id = ANY (%s)",
        "SELECT tip_id, rule_id, units, followed_n, followed_sum, harm_n"
        "  FROM ctxgraph.tip_rule_stats WHERE skill = %s AND tip_id = ANY (%s)",
    ):
        rows += [tuple(round(v, 9) if isinstance(v, float) else v for v in row)
                 for row in conn.execute(query, (SKILL, tip_ids)).fetchall()]
    return sorted(rows, key=repr)


def test_concurrent_write_backs_of_shared_tips_commit_and_stay_exact(connections) -> None:
    """Scorer write-backs of disjoint rows of the same tips, beside outcomes corrected on their attempts.

    Each write-back moves the tips' levels by difference (one-row pairs) or recomputes them (pairs
    of several rows), under the tips' locks taken in tip order; none may deadlock or lose another's
    change: afterwards every level equals a from-scratch rebuild of those tips.
    """
    setup = connections()
    client = Client(setup)
    rule = f"rule_{uuid.uuid4().hex[:8]}"
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    tips = new_tips(setup, rule, 6)
    attempts: list[int] = []
    for number in range(1, 25):
        attempt = client.save_attempt(SKILL, run_id, rule, number)
        chosen = [tips[(number + k) % 6] for k in range(3)]
        ids = client.log_retrievals(SKILL, run_id, rule, chosen, [0.5] * len(chosen), BASE_TIME)
        if number % 4 == 0:  # the tip retrieved again in the same attempt: a pair of two rows
            ids += client.log_retrievals(SKILL, run_id, rule, chosen[:1], [0.5], BASE_TIME)
        client.update_retrieval_attempt_ids(SKILL, ids, attempt)
        client.record_outcome(SKILL, attempt, number % 3 == 0, None if number % 3 == 0 else
                              ("health_failure" if number % 5 == 0 else "clean_failure"))
        attempts.append(attempt)
    setup.commit()
    row_ids = [r[0] for r in setup.execute("SELECT id FROM ctxgraph.tip_retrievals WHERE skill = %s AND run_id = %s"
                                           " ORDER BY id", (SKILL, run_id)).fetchall()]
    assert setup.execute("SELECT count(*) FILTER (WHERE scored > 1) > 0 AND count(*) FILTER (WHERE scored = 1) > 0"
                         "  FROM ctxgraph.tip_attempt_stats WHERE skill = %s AND tip_id = ANY (%s)",
                         (SKILL, tips)).fetchone()[0], "both one-row pairs and pairs of several rows"
    setup.commit()

    writers = 3
    barrier = threading.Barrier(writers + 1)

    def write_back(k: int) -> Callable[[], None]:
        conn = connections()
        mine = row_ids[k::writers]

        def job() -> None:
            for round_ in range(8):
                barrier.wait(timeout=20)
                conn.execute(
                    "UPDATE ctxgraph.tip_retrievals AS r"
                    "   SET tip_followed_llm = CASE WHEN (r.id + %s) %% 3 = 0 THEN NULL ELSE (r.id + %s) %% 2 = 0 END,"
                    "       tip_followed_emb = ((r.id * 7 + %s) %% 10) / 10.0,"
                    "       follow_probability = CASE WHEN (r.id + %s) %% 4 = 0 THEN NULL ELSE ((r.id + %s) %% 5) / 5.0 END"
                    " WHERE r.skill = %s AND r.id = ANY (%s)",
                    (round_, round_, round_, round_, round_, SKILL, mine))
                conn.commit()

        return job

    def outcomes_corrected() -> None:
        conn = connections()
        for round_ in range(8):
            barrier.wait(timeout=20)
            # One statement: its trigger locks every tip it touches in tip order (several statements
            # in one transaction would cross the write-backs, as the per-call writers above do).
            conn.execute("UPDATE ctxgraph.attempts SET failure_mode = CASE failure_mode WHEN 'clean_failure'"
                         " THEN 'health_failure' WHEN 'health_failure' THEN 'clean_failure' END"
                         " WHERE skill = %s AND id = ANY (%s) AND failure_mode IS NOT NULL",
                         (SKILL, attempts[round_ % 3::3]))
            conn.commit()

    outcomes = in_threads(*(write_back(k) for k in range(writers)), outcomes_corrected)
    assert outcomes == [None] * (writers + 1)

    kept = maintained_levels(setup, tips)
    with setup.transaction(force_rollback=True):
        setup.execute("SELECT ctxgraph.refresh_tip_stats(%s, %s)", (SKILL, tips))
        rebuilt = maintained_levels(setup, tips)
    setup.rollback()
    assert kept == rebuilt


# -- Interleavings forced with locks ------------------------------------------------------------------
# Each test below parks one session on a lock another holds (pg_stat_activity says so), so the order
# in which the sessions take their locks is the one the test names, not a matter of timing.

def wait_until_blocked(watcher: psycopg.Connection, blocked: psycopg.Connection,
                       unless_done: Background | None = None) -> None:
    """Return once ``blocked``'s backend waits for a lock, or ``unless_done`` has finished (fail after 20 s)."""
    pid = blocked.info.backend_pid
    deadline = time.monotonic() + 20
    while not (unless_done is not None and unless_done.finished()) and watcher.execute(
            "SELECT wait_event_type FROM pg_catalog.pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0] != "Lock":
        assert time.monotonic() < deadline, "the session neither waited for a lock nor finished"
        time.sleep(0.01)
    watcher.rollback()


def recorded_attempt(client: Client, run_id: str, rule: str, number: int, tips: list[int]) -> tuple[int, list[int]]:
    """An attempt of ``tips`` with its result recorded (a clean failure); its id and its rows' ids."""
    ids = client.log_retrievals(SKILL, run_id, rule, tips, [0.5] * len(tips), BASE_TIME)
    attempt = client.save_attempt(SKILL, run_id, rule, number)
    client.update_retrieval_attempt_ids(SKILL, ids, attempt)
    client.record_outcome(SKILL, attempt, False, "clean_failure")
    return attempt, ids


class Background:
    """A transaction run on a thread, then committed: one statement, or ``work()`` on its connection."""

    def __init__(self, conn: psycopg.Connection, work: str | Callable[[], object], args: tuple = ()) -> None:
        self.outcome: list[str] = []

        def run() -> None:
            try:
                if isinstance(work, str):
                    conn.execute(work, args)
                else:
                    work()
                conn.commit()
                self.outcome.append("committed")
            except psycopg.Error as exc:
                conn.rollback()
                self.outcome.append(f"{exc.sqlstate}: {str(exc).splitlines()[0]}")

        self.thread = threading.Thread(target=run)
        self.thread.start()

    def finished(self) -> bool:
        return not self.thread.is_alive()

    def join(self) -> str:
        """'committed', or the SQLSTATE and first line of the error that rolled it back."""
        self.thread.join(timeout=60)
        assert not self.thread.is_alive(), "a writer hung"
        return self.outcome[0]


@pytest.mark.parametrize("writer", ["record_outcome", "refresh_tip_stats"])
def test_a_tip_deleted_under_a_writer_leaves_the_writer_whole(connections, writer: str) -> None:
    """A transaction deletes a tip (its log rows, then the tip) while another corrects an attempt
    that retrieved it, or rebuilds its levels. The writer waits for the delete; once it commits,
    the writer goes on without the tip and commits, and the levels of the tips left stay exact.
    (What it guards against: the writer re-creating the deleted tip's stats row and failing on its
    key, 23503 on tip_stats, a table no caller writes.)"""
    setup = connections()
    client = Client(setup)
    rule, run_id = f"rule_{uuid.uuid4().hex[:8]}", f"run-{uuid.uuid4().hex[:8]}"
    tips = new_tips(setup, rule, 3)
    attempt, _ = recorded_attempt(client, run_id, rule, 1, tips)
    setup.commit()
    doomed, kept = tips[0], tips[1:]

    deleter, writer_conn = connections(), connections()
    deleter.execute("DELETE FROM ctxgraph.tip_retrievals WHERE skill = %s AND tip_id = %s", (SKILL, doomed))
    deleter.execute("DELETE FROM ctxgraph.tips WHERE skill = %s AND id = %s", (SKILL, doomed))
    statement, args = {
        "record_outcome": ("SELECT ctxgraph.record_outcome(%s, %s, false, 'health_failure')", (SKILL, attempt)),
        "refresh_tip_stats": ("SELECT ctxgraph.refresh_tip_stats(%s, %s)", (SKILL, tips)),
    }[writer]
    writing = Background(writer_conn, statement, args)
    wait_until_blocked(setup, writer_conn)
    deleter.commit()
    assert writing.join() == "committed"

    assert setup.execute("SELECT count(*) FROM ctxgraph.tip_stats WHERE skill = %s AND tip_id = %s",
                         (SKILL, doomed)).fetchone()[0] == 0
    levels = maintained_levels(setup, kept)
    with setup.transaction(force_rollback=True):
        setup.execute("SELECT ctxgraph.refresh_tip_stats(%s, %s)", (SKILL, kept))
        assert maintained_levels(setup, kept) == levels
    setup.rollback()


def test_one_write_back_of_scored_and_unscored_rows_locks_its_tips_in_order(connections) -> None:
    """One UPDATE of follow columns on a scored row (tip T2) and on a row whose attempt has no result
    yet (tip T1 < T2) takes T1's stats row before T2's, as every statement does: beside a
    log_retrievals of T1 and T2 it waits instead of deadlocking. (What it guards against: the scored rows'
    tips locked first and the others' after, so that with T2 held elsewhere the write-back waits at
    T2, log_retrievals takes T1 and queues behind it, and the write-back then asks for T1: 40P01.)"""
    setup = connections()
    client = Client(setup)
    rule, run_id = f"rule_{uuid.uuid4().hex[:8]}", f"run-{uuid.uuid4().hex[:8]}"
    t1, t2 = sorted(new_tips(setup, rule, 2))
    _, (scored,) = recorded_attempt(client, run_id, rule, 1, [t2])
    (unscored,) = client.log_retrievals(SKILL, run_id, rule, [t1], [0.5], BASE_TIME)
    setup.commit()

    holder, write_back, logger = connections(), connections(), connections()
    holder.execute("SELECT 1 FROM ctxgraph.tip_stats WHERE skill = %s AND tip_id = %s FOR UPDATE", (SKILL, t2))
    writing_back = Background(
        write_back, "UPDATE ctxgraph.tip_retrievals SET tip_followed_llm = true, tip_followed_emb = 0.9"
                    " WHERE skill = %s AND id = ANY (%s)", (SKILL, [unscored, scored]))
    wait_until_blocked(setup, write_back)
    logging = Background(
        logger, "SELECT ctxgraph.log_retrievals(%s, %s, %s, %s, ARRAY[0.1, 0.2], %s)",
        (SKILL, f"{run_id}-b", rule, [t1, t2], BASE_TIME))
    wait_until_blocked(setup, logger)
    holder.commit()
    assert (writing_back.join(), logging.join()) == ("committed", "committed")


def test_correcting_an_outcome_beside_a_write_back_of_its_rows_waits_instead_of_deadlocking(connections) -> None:
    """record_outcome correcting a failure mode takes the attempt's log rows before its tips, as the
    scorer's write-back of those rows does (its UPDATE, then its trigger). (What it guards against: the
    attempts' trigger locking the tips first, record_outcome then waiting for the rows the
    write-back holds while the write-back waits for the tips: 40P01.)"""
    setup = connections()
    client = Client(setup)
    rule, run_id = f"rule_{uuid.uuid4().hex[:8]}", f"run-{uuid.uuid4().hex[:8]}"
    t0, t1, t2 = sorted(new_tips(setup, rule, 3))
    corrected, corrected_rows = recorded_attempt(client, run_id, rule, 1, [t1, t2])
    _, other_rows = recorded_attempt(client, run_id, rule, 2, [t0])
    setup.commit()

    holder, write_back, outcome = connections(), connections(), connections()
    # The write-back's rows are locked by its UPDATE; it then parks at T0, which the holder has.
    holder.execute("SELECT 1 FROM ctxgraph.tip_stats WHERE skill = %s AND tip_id = %s FOR UPDATE", (SKILL, t0))
    writing_back = Background(
        write_back, "UPDATE ctxgraph.tip_retrievals SET tip_followed_llm = true, tip_followed_emb = 0.9"
                    " WHERE skill = %s AND id = ANY (%s)", (SKILL, corrected_rows + other_rows))
    wait_until_blocked(setup, write_back)
    correcting = Background(outcome, "SELECT ctxgraph.record_outcome(%s, %s, false, 'health_failure')",
                            (SKILL, corrected))
    wait_until_blocked(setup, outcome)
    holder.commit()
    assert (writing_back.join(), correcting.join()) == ("committed", "committed")

    levels = maintained_levels(setup, [t0, t1, t2])
    with setup.transaction(force_rollback=True):
        setup.execute("SELECT ctxgraph.refresh_tip_stats(%s, %s)", (SKILL, [t0, t1, t2]))
        assert maintained_levels(setup, [t0, t1, t2]) == levels
    setup.rollback()


def test_a_tip_created_during_a_full_rebuild_waits_for_it(connections) -> None:
    """A full rebuild of the skill's levels (refresh_tip_stats(skill), and so every follow.*
    parameter change) holds every tip's stats row, so writers of those tips wait for it; a tip
    created while it runs has none to wait on. Its creation now waits for the rebuild instead, so
    the rebuild commits and the levels stay exact. (What it guards against: the new tip's first
    graded attempt committing between the rebuild's emptying of a level and its refill, which then
    inserted that attempt's pair a second time: 23505 on tip_attempt_stats_pkey.)"""
    setup = connections()
    client = Client(setup)
    rule, run_id = f"rule_{uuid.uuid4().hex[:8]}", f"run-{uuid.uuid4().hex[:8]}"
    (old_tip,) = new_tips(setup, rule, 1)
    recorded_attempt(client, run_id, rule, 1, [old_tip])
    setup.commit()

    holder, rebuild, writer = connections(), connections(), connections()
    # The rebuild empties the pairs, then parks in its DELETE of the (tip, rule) rows at the old tip's.
    holder.execute("SELECT 1 FROM ctxgraph.tip_rule_stats WHERE skill = %s AND tip_id = %s FOR UPDATE",
                   (SKILL, old_tip))
    rebuilding = Background(rebuild, "SELECT ctxgraph.refresh_tip_stats(%s)", (SKILL,))
    wait_until_blocked(setup, rebuild)

    new_tip: list[int] = []

    def first_graded_attempt_of_a_new_tip() -> None:
        new_tip.append(writer.execute("INSERT INTO ctxgraph.tips (skill, rule_id, body) VALUES (%s, %s, %s)"
                                      " RETURNING id", (SKILL, rule, f"new tip {uuid.uuid4().hex}")).fetchone()[0])
        recorded_attempt(Client(writer), f"{run_id}-new", rule, 1, new_tip)

    creating = Background(writer, first_graded_attempt_of_a_new_tip)
    wait_until_blocked(setup, writer, unless_done=creating)
    holder.commit()
    assert rebuilding.join() == "committed"
    assert creating.join() == "committed"

    tips = [old_tip, *new_tip]
    levels = maintained_levels(setup, tips)
    with setup.transaction(force_rollback=True):
        setup.execute("SELECT ctxgraph.refresh_tip_stats(%s, %s)", (SKILL, tips))
        assert maintained_levels(setup, tips) == levels
    setup.rollback()


def write_no_evidence_fit(conn: psycopg.Connection, skill: str) -> None:
    """A fit of a skill whose tips have no evidence, staged and written as ctxgraph.fit writes one."""
    conn.execute("SELECT ctxgraph.tip_fit_staging()")
    conn.execute("INSERT INTO pg_temp.ctxgraph_tip_fit (tip_id, attempts, followed_attempts, method, evidence_version)"
                 " SELECT id, 0, 0, 'no_evidence', 0 FROM ctxgraph.tips WHERE skill = %s", (skill,))
    conn.execute("SELECT ctxgraph.write_tip_fit(%s, %s, 0, '{}', '{}')", (skill, BASE_TIME))


def test_a_fit_at_repeatable_read_behind_a_newer_one_is_a_serialization_failure(connections) -> None:
    """Two writes of one skill's fit take turns (an advisory lock in write_tip_fit); a caller at
    REPEATABLE READ whose snapshot predates the other's committed first fit cannot see those rows
    to replace them, and gets 40001, the error a caller at that level retries, not 23505 on
    tip_effects."""
    setup = connections()
    skill = f"fit_{uuid.uuid4().hex[:8]}"
    setup.execute("SELECT ctxgraph.add_skill(%s, 'graded')", (skill,))
    setup.execute("INSERT INTO ctxgraph.tips (skill, rule_id, body) VALUES (%s, 'r', 'one'), (%s, 'r', 'two')",
                  (skill, skill))
    setup.commit()
    try:
        late, first = connections(), connections()
        late.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        late.execute("SELECT count(*) FROM ctxgraph.tip_effects WHERE skill = %s", (skill,))  # its snapshot
        write_no_evidence_fit(first, skill)
        first.commit()
        with pytest.raises(errors.SerializationFailure):
            write_no_evidence_fit(late, skill)
        late.rollback()
    finally:
        setup.execute("SELECT ctxgraph.drop_skill(%s)", (skill,))
        setup.commit()
