"""Benchmark: the ranker's read under load, with writers and a scoring pass running (make bench).

On a deployed throwaway database that already holds a history (scripts/bench.sh generates one with
bench/generate.sql), for ``--seconds`` (60) on loopback:

- ``--readers`` (16) processes, each with its own connection as ``ctxgraph_ranker``, read
  ``stig.tip_hit_rates`` for 50 candidate tips of a random rule (the ranker's prepared read) as fast
  as they can;
- ``--writers`` (4) agent processes, each as ``ctxgraph_writer``, write attempts of one new run
  through the four write-path calls (log_retrievals, save_attempt, update_retrieval_attempt_ids,
  record_outcome; one autocommit transaction each, as an agent writes them), 5 tips each on rules of
  their own, at most ``--attempts-per-second`` (5) each, and append each attempt's line (with its
  fix script) to the run's log. A real agent writes an attempt every few seconds (its fix script
  runs and is evaluated in between); 5 a second per agent is a stress rate, and paced so that the
  judge can keep up: unpaced, a fast machine writes tens of thousands of retrievals a minute and
  the last pass, not the load, sets the run's length;
- ``ctxgraph score`` runs again and again over that run as ``ctxgraph_scorer`` (a process of its own,
  ``--no-embed``: the embedding leg's CPU is measured by bench/scoring_pass.py), against a local
  OpenAI-compatible judge that answers each request after ``--judge-delay`` seconds, with
  ``--judge-concurrency`` (32) requests in flight.

When the time is up the writers stop, the running pass ends, and one last pass scores what the
writers wrote last. Printed: the read's p50/p99 under load beside its p50 idle (one reader, nothing
else running, before the load), reads and attempts written per second, errors by SQLSTATE for every
client, the deadlocks PostgreSQL counted (pg_stat_database) and the 40P01 errors clients saw, each
pass's exit status, rows of the run left unscored at the end, questions the judge was asked twice,
and whether the maintained aggregates equal a from-scratch computation: the ranker view against
bench/measure.py's from-scratch query over the whole log, and every maintained level against
refresh_tip_stats' rebuild (rolled back). Nothing passes or fails on a time; the exit status is 1
when a client failed or an aggregate differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scorer"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from judge_stub_server import StubServer, slow, verdict  # noqa: E402
from measure import FROM_SCRATCH_ALL, RANKER_READ, percentile, same_rows  # noqa: E402

from ctxgraph.client import Client, connect  # noqa: E402

SKILL = "stig"
TIPS_PER_ATTEMPT = 5
CANDIDATES_PER_READ = 50
# The levels the write path maintains and refresh_tip_stats rebuilds from scratch.
MAINTAINED = ("tip_stats", "tip_attempt_stats", "tip_rule_stats", "rule_attempt_stats", "rule_stats")
# Bookkeeping a rebuild rewrites (when, and the evidence counter the effects' fingerprint reads), not data.
BOOKKEEPING = ("refreshed_at", "evidence_version")
# A tip never retrieved has an all-zero tip_stats row after a rebuild and none from the write path;
# the views read both as zero, so only rows with a retrieval are compared.
COMPARED_ROWS = {"tip_stats": "retrievals > 0"}


def sqlstate(exc: BaseException) -> str:
    return getattr(exc, "sqlstate", None) or type(exc).__name__


def as_role(dsn: str, role: str) -> psycopg.Connection:
    conn = connect(dsn)
    conn.execute(f"SET ROLE {role}")
    conn.commit()
    conn.autocommit = True
    return conn


# -- the clients -------------------------------------------------------------------------------------

def reader(dsn: str, id_sets: list[list[int]], start_at: float, stop_at: float, seed: int, out: Any) -> None:
    """Read the ranker view until stop_at; report latencies (ms) and errors by SQLSTATE."""
    rng = random.Random(seed)
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    conn = as_role(dsn, "ctxgraph_ranker")
    while time.time() < start_at:
        time.sleep(0.01)
    while time.time() < stop_at:
        ids = rng.choice(id_sets)
        began = time.perf_counter()
        try:
            conn.execute(RANKER_READ, (ids,), prepare=True).fetchall()
        except psycopg.Error as exc:
            errors[sqlstate(exc)] += 1
            continue
        latencies.append((time.perf_counter() - began) * 1000.0)
    conn.close()
    out.put(("reader", latencies, dict(errors)))


def writer(dsn: str, rules: dict[str, list[int]], run_id: str, log_path: str, log_lock: Any,
           start_at: float, stop_at: float, seed: int, out: Any, max_attempts: int | None = None,
           attempts_per_second: float = 0.0) -> None:
    """Write attempts through the four write-path calls until stop_at (or max_attempts are written),
    each no sooner than 1/attempts_per_second after the one before it (0: unpaced); log each attempt's
    line."""
    rng = random.Random(seed)
    conn = as_role(dsn, "ctxgraph_writer")
    client = Client(conn)
    attempt_numbers: Counter[str] = Counter()
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    mine = sorted(rules)
    while time.time() < start_at:
        time.sleep(0.01)
    interval = 1.0 / attempts_per_second if attempts_per_second > 0 else 0.0
    next_at = time.time()
    while time.time() < stop_at and (max_attempts is None or len(latencies) < max_attempts):
        if interval:
            # A fixed schedule, not a sleep after each attempt: a slow attempt does not lower the rate.
            time.sleep(max(0.0, next_at - time.time()))
            next_at += interval
            if time.time() >= stop_at:
                break
        rule_id = rng.choice(mine)
        tips = rng.sample(rules[rule_id], min(TIPS_PER_ATTEMPT, len(rules[rule_id])))
        attempt_numbers[rule_id] += 1
        number_in_rule = attempt_numbers[rule_id]
        passed = rng.random() < 0.6
        began = time.perf_counter()
        started = datetime.now(timezone.utc)
        try:
            ids = client.log_retrievals(SKILL, run_id, rule_id, tips, [round(0.9 - 0.05 * k, 3) for k in range(len(tips))])
            attempt_id = client.save_attempt(SKILL, run_id, rule_id, number_in_rule, started_at=started)
            client.update_retrieval_attempt_ids(SKILL, ids, attempt_id)
            client.record_outcome(SKILL, attempt_id, passed, None if passed else "clean_failure")
        except psycopg.Error as exc:
            errors[sqlstate(exc)] += 1
            continue
        latencies.append((time.perf_counter() - began) * 1000.0)
        line = {"type": "attempt", "run_id": run_id, "rule_id": rule_id, "attempt_number": number_in_rule,
                "attempt_id": attempt_id, "started_at": started.isoformat(),
                "ended_at": datetime.now(timezone.utc).isoformat(),
                "fix_script": fix_script(rule_id, number_in_rule, rng),
                "result": {"passed": passed, "failure_mode": None if passed else "clean_failure"}}
        with log_lock:
            with open(log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps(line) + "\n")
    conn.close()
    out.put(("writer", latencies, dict(errors)))


def fix_script(rule_id: str, n: int, rng: random.Random) -> str:
    setting = rng.choice(["PermitRootLogin no", "MaxAuthTries 3", "ClientAliveInterval 600", "X11Forwarding no"])
    return (f"#!/usr/bin/env bash\n# Rule: {rule_id}, attempt {n}\nset -euo pipefail\n"
            f"sed -i 's/^#\\?{setting.split()[0]} .*/{setting}/' /etc/ssh/sshd_config\n"
            f"grep -q '^{setting}' /etc/ssh/sshd_config || echo '{setting}' >> /etc/ssh/sshd_config\n"
            "sshd -t && systemctl reload sshd\n")


def judge_answer(request: Any) -> Any:
    """The same verdict for the same question, after the configured delay."""
    digest = hashlib.sha256(json.dumps(request.messages, sort_keys=True).encode()).digest()
    return slow(JUDGE_DELAY, verdict(digest[0] % 2 == 0))


JUDGE_DELAY = 0.05


def scoring_passes(dsn: str, run_id: str, log_path: Path, judge_url: str, stop_at: float,
                   results: list[dict[str, Any]], concurrency: int) -> None:
    """ctxgraph score over the run, again and again until stop_at (each pass runs to its end)."""
    env = dict(os.environ, DATABASE_URL=dsn, PGOPTIONS="-c role=ctxgraph_scorer", HF_HUB_OFFLINE="1")
    command = [str(ROOT / ".venv/bin/ctxgraph"), "score", "--skill", SKILL, "--run", run_id, "--log", str(log_path),
               "--judge-url", judge_url, "--judge-model", "stub-model", "--concurrency", str(concurrency),
               "--no-embed", "--quiet"]
    while time.time() < stop_at:
        began = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        results.append({"exit": done.returncode, "seconds": time.perf_counter() - began,
                        "stderr": done.stderr[-2000:], "stdout": done.stdout[-2000:]})
        if time.time() < stop_at:
            time.sleep(1.0)


# -- the checks ----------------------------------------------------------------------------------------

def levels_equal_rebuild(conn: psycopg.Connection) -> dict[str, int]:
    """Rows of each maintained level that differ from refresh_tip_stats' rebuild (rolled back)."""
    conn.autocommit = False
    differing: dict[str, int] = {}
    try:
        selects = {}
        for table in MAINTAINED:
            columns = conn.execute(
                "SELECT column_name, data_type FROM information_schema.columns"
                " WHERE table_schema = 'ctxgraph' AND table_name = %s ORDER BY ordinal_position", (table,)).fetchall()
            # Sums moved by differences equal the rebuild's up to float rounding in the last bits.
            parts = [f"round({name}::numeric, 9) AS {name}" if kind in ("double precision", "real", "numeric")
                     else name for name, kind in columns if name not in BOOKKEEPING]
            selects[table] = (f"SELECT {', '.join(parts)} FROM ctxgraph.{table}"
                              f" WHERE {COMPARED_ROWS.get(table, 'TRUE')}")
            conn.execute(f"CREATE TEMP TABLE maintained_{table} AS {selects[table]}")
        conn.execute("SELECT ctxgraph.refresh_tip_stats(%s)", (SKILL,))
        for table, select in selects.items():
            differing[table] = conn.execute(
                f"SELECT count(*) FROM (({select} EXCEPT ALL TABLE maintained_{table})"
                f" UNION ALL (TABLE maintained_{table} EXCEPT ALL {select})) AS d").fetchone()[0]
    finally:
        conn.rollback()
        conn.autocommit = True
    return differing


def database_deadlocks(conn: psycopg.Connection) -> int:
    return int(conn.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").fetchone()[0])


def ms(values: list[float], q: float) -> str:
    return f"{percentile(values, q):.2f} ms" if values else "n/a"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--readers", type=int, default=16)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--attempts-per-second", type=float, default=5.0,
                        help="the most attempts one writer starts a second (0: as fast as it can)")
    parser.add_argument("--judge-delay", type=float, default=0.05, help="seconds the local judge takes per answer")
    parser.add_argument("--judge-concurrency", type=int, default=32, help="judge requests each pass keeps in flight")
    parser.add_argument("--idle-seconds", type=float, default=5.0, help="how long the idle read is measured")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    global JUDGE_DELAY
    JUDGE_DELAY = args.judge_delay
    dsn = os.environ["DATABASE_URL"]
    rng = random.Random(args.seed)

    admin = connect(dsn)
    admin.autocommit = True
    rows = admin.execute("SELECT rule_id, array_agg(id ORDER BY id) FROM stig.tips WHERE retired_at IS NULL"
                         " GROUP BY rule_id ORDER BY rule_id").fetchall()
    rules = {rule: list(ids) for rule, ids in rows if len(ids) >= TIPS_PER_ATTEMPT}
    if len(rules) < args.writers:
        print(f"load run: needs at least {args.writers} rules with {TIPS_PER_ATTEMPT} tips", file=sys.stderr)
        return 2
    all_tips = sorted(t for ids in rules.values() for t in ids)
    # The ranker asks for a rule's candidates: 50 tips, the rule's own and its neighbours'.
    id_sets = [sorted(rng.sample(all_tips, min(CANDIDATES_PER_READ, len(all_tips)))) for _ in range(200)]
    run_id = f"load-{int(time.time())}"
    workdir = Path(tempfile.mkdtemp(prefix="ctxgraph-load-"))
    log_path = workdir / f"{run_id}.jsonl"
    log_path.write_text(json.dumps({"type": "run_start", "run_id": run_id,
                                    "started_at": datetime.now(timezone.utc).isoformat(), "skill": SKILL}) + "\n")

    ctx = mp.get_context("fork")
    out = ctx.Queue()
    log_lock = ctx.Lock()

    # Idle: one reader, nothing else running.
    now = time.time()
    idle = ctx.Process(target=reader, args=(dsn, id_sets, now, now + args.idle_seconds, args.seed, out))
    idle.start()
    _, idle_latencies, idle_errors = out.get()
    idle.join()

    # One attempt before the load, so the run exists and its log names an attempt for the first pass.
    rule_names = sorted(rules)
    shares = [{r: rules[r] for r in rule_names[k::args.writers]} for k in range(args.writers)]
    warm = ctx.Process(target=writer, args=(dsn, {"load-warm-up": rules[rule_names[0]]}, run_id, str(log_path),
                                            log_lock, 0, time.time() + 60, args.seed, out, 1))
    warm.start()
    _, warm_latencies, warm_errors = out.get()
    warm.join()

    deadlocks_before = database_deadlocks(admin)
    server = StubServer(responder=judge_answer).start()
    start_at = time.time() + 2.0
    stop_at = start_at + args.seconds
    clients = [ctx.Process(target=reader, args=(dsn, id_sets, start_at, stop_at, args.seed + 1 + k, out))
               for k in range(args.readers)]
    clients += [ctx.Process(target=writer, args=(dsn, shares[k], run_id, str(log_path), log_lock,
                                                 start_at, stop_at, args.seed + 100 + k, out, None,
                                                 args.attempts_per_second))
                for k in range(args.writers)]
    for process in clients:
        process.start()
    passes: list[dict[str, Any]] = []
    while time.time() < start_at:
        time.sleep(0.01)
    pass_loop = threading.Thread(target=scoring_passes, args=(dsn, run_id, log_path, server.base_url, stop_at, passes,
                                                                      args.judge_concurrency))
    pass_loop.start()
    reports = [out.get() for _ in clients]
    for process in clients:
        process.join()
    pass_loop.join()
    in_load = len(passes)
    # Every attempt line is in the log now: one last pass scores what the writers wrote last.
    last_began = time.perf_counter()
    scoring_passes(dsn, run_id, log_path, server.base_url, time.time() + 1e-3, passes, args.judge_concurrency)
    last_pass_seconds = time.perf_counter() - last_began
    server.stop()
    deadlocks = database_deadlocks(admin) - deadlocks_before

    read_latencies = [v for kind, lat, _ in reports if kind == "reader" for v in lat]
    write_latencies = [v for kind, lat, _ in reports if kind == "writer" for v in lat]
    errors: Counter[str] = Counter()
    for kind, _, errs in reports:
        for state, count in errs.items():
            errors[f"{kind} {state}"] += count
    for state, count in {**idle_errors, **warm_errors}.items():
        errors[f"setup {state}"] += count
    failed_passes = [p for p in passes if p["exit"] != 0]
    unscored = admin.execute("SELECT count(*) FROM ctxgraph.tip_retrievals WHERE skill = %s AND run_id = %s"
                             " AND tip_followed_computed_at IS NULL", (SKILL, run_id)).fetchone()[0]
    retrievals = admin.execute("SELECT count(*) FROM ctxgraph.tip_retrievals WHERE skill = %s AND run_id = %s",
                               (SKILL, run_id)).fetchone()[0]
    questions = Counter(json.dumps(r.messages, sort_keys=True) for r in server.chat_requests())
    asked_twice = sum(n - 1 for n in questions.values())
    view_equal = same_rows(admin.execute("SELECT * FROM stig.tip_hit_rates").fetchall(),
                           admin.execute(FROM_SCRATCH_ALL).fetchall())
    levels = levels_equal_rebuild(admin)
    admin.close()

    figures = {
        "seconds": args.seconds, "readers": args.readers, "writers": args.writers,
        "read_idle_p50_ms": percentile(idle_latencies, 50),
        "read_load_p50_ms": percentile(read_latencies, 50) if read_latencies else None,
        "read_load_p99_ms": percentile(read_latencies, 99) if read_latencies else None,
        "reads": len(read_latencies), "attempts": len(write_latencies),
        "attempt_p50_ms": percentile(write_latencies, 50) if write_latencies else None,
        "attempt_p99_ms": percentile(write_latencies, 99) if write_latencies else None,
        "errors": dict(errors), "deadlocks": deadlocks, "passes_in_load": in_load,
        "attempts_per_second_per_writer": args.attempts_per_second, "judge_concurrency": args.judge_concurrency,
        "last_pass_seconds": last_pass_seconds,
        "passes_failed": len(failed_passes), "judge_questions": sum(questions.values()),
        "judge_asked_twice": asked_twice, "run_retrievals": retrievals, "unscored_at_end": unscored,
        "view_equals_from_scratch": view_equal, "levels_differing": levels,
    }
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")

    pace = f"at most {args.attempts_per_second:g}/s each" if args.attempts_per_second > 0 else "unpaced"
    print(f"load run: {args.readers} readers of stig.tip_hit_rates ({CANDIDATES_PER_READ} tips a read), "
          f"{args.writers} agents writing attempts ({pace}), ctxgraph score looping (judge answers after "
          f"{args.judge_delay:g} s, {args.judge_concurrency} in flight, --no-embed), {args.seconds:g} s on loopback")
    print(f"  ranker read: p50 {ms(idle_latencies, 50)} idle ({len(idle_latencies)} reads, one reader alone); "
          f"under load p50 {ms(read_latencies, 50)}, p99 {ms(read_latencies, 99)} "
          f"({len(read_latencies)} reads, {len(read_latencies) / args.seconds:.0f}/s)")
    print(f"  attempts written: {len(write_latencies)} ({len(write_latencies) / args.seconds:.1f}/s; "
          f"four calls each: p50 {ms(write_latencies, 50)}, p99 {ms(write_latencies, 99)})")
    print(f"  errors: {sum(errors.values())}" + (f" ({', '.join(f'{k} x{v}' for k, v in sorted(errors.items()))})"
                                                 if errors else ""))
    print(f"  deadlocks: {deadlocks} counted by PostgreSQL")
    print(f"  scoring passes: {in_load} during the load and 1 after it ({last_pass_seconds:.1f} s), "
          f"{len(failed_passes)} failed; "
          f"{retrievals} retrievals in the run, {unscored} unscored at the end; judge asked "
          f"{sum(questions.values())} questions, {asked_twice} of them twice")
    for failed in failed_passes[:3]:
        print(f"    pass exit {failed['exit']}: {failed['stderr'].strip()[-400:]}")
    print(f"  aggregates equal from scratch: ranker view {'yes' if view_equal else 'NO'}; maintained levels "
          + ", ".join(f"{t} {'yes' if n == 0 else f'NO ({n} rows)'}" for t, n in levels.items()))
    healthy = (not errors and deadlocks == 0 and not failed_passes and unscored == 0 and asked_twice == 0
               and view_equal and not any(levels.values()))
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
