"""`ctxgraph load --per-call` on a fresh database: what an attempt costs as the load grows.

Replays a generated run log through the per-call loader (``loader.load_run(bulk=False)``, four calls
per attempt) into the database the libpq variables name, which must be freshly deployed, and prints
the median cost of an attempt over the window ending at each point (250, 1,000 and 3,000 attempts by
default), and each point's ratio to the first. ``--commit-every N`` splits the log into files of N
attempts, each loaded in its own transaction, as ``ctxgraph load --log a --log b ...`` does; without
it the whole log is one transaction. A flat load has ratios near 1.

Milliseconds move with whatever else the machine runs. When the role may LOAD auto_explain (a
superuser), the shared buffers each attempt's calls touched are counted as well, from the top-level
plans (timing off): a measure of work that the machine's noise does not move.

Each attempt retrieves 5 of its rule's tips; ``--rules`` and ``--tips-per-rule`` set the tip set
(the default, 200 rules of 10 tips, gives each tip an attempt about every 400). With few tips
(``--rules 15 --tips-per-rule 5``, the size of the sample's set) each tip's maintained rows are
rewritten every few attempts, and in one transaction every version written stays in the way of the
next read of that row until the transaction ends: buffers per attempt then grow with the attempts
per tip (about 7x from 250 to 3,000 attempts, for 1.3x the time), where files of 250 stay flat.
Nothing is rolled back: the database is the bench's to drop.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg

from ctxgraph import loader
from ctxgraph.client import Client

SKILL = "stig"
T0 = datetime(2026, 12, 1, 6, 0, tzinfo=timezone.utc)


def write_tips(path: Path, rules: int, per_rule: int) -> list[tuple[str, list[str]]]:
    """A tips.jsonl of rules x per_rule tips; returns each rule with its tip refs."""
    plan = []
    with path.open("w", encoding="utf-8") as fh:
        for r in range(rules):
            rule_id, refs = f"bench_growth_rule_{r:04d}", []
            for k in range(per_rule):
                ref = f"g{r}-{k}"
                refs.append(ref)
                body = f"Rule {r}, tip {k}: check the setting before changing it."
                fh.write(json.dumps({"tip_ref": ref, "rule_id": rule_id, "body": body}) + "\n")
            plan.append((rule_id, refs))
    return plan


def write_logs(workdir: Path, tips: list[tuple[str, list[str]]], attempts: int, per_file: int,
               rng: random.Random) -> list[Path]:
    """The run log of one run, split into files of per_file attempts (one file for 0)."""
    per_file = per_file or attempts
    numbers: dict[str, int] = {}
    paths, fh = [], None
    for i in range(attempts):
        if i % per_file == 0:
            if fh:
                fh.close()
            paths.append(workdir / f"run-{len(paths):03d}.jsonl")
            fh = paths[-1].open("w", encoding="utf-8")
            if i == 0:
                fh.write(json.dumps({"type": "run_start", "run_id": "growth",
                                     "started_at": T0.isoformat()}) + "\n")
        rule_id, refs = tips[i % len(tips)]
        numbers[rule_id] = numbers.get(rule_id, 0) + 1
        at = T0 + timedelta(seconds=2 * i)
        passed = rng.random() < 0.6
        fh.write(json.dumps({"type": "retrieval", "run_id": "growth", "rule_id": rule_id,
                             "attempt_number": numbers[rule_id], "retrieved_at": at.isoformat(),
                             "tips": [{"tip_ref": ref, "similarity_score": round(0.9 - 0.05 * k, 3)}
                                      for k, ref in enumerate(rng.sample(refs, min(5, len(refs))))]}) + "\n")
        fh.write(json.dumps({"type": "attempt", "run_id": "growth", "rule_id": rule_id,
                             "attempt_number": numbers[rule_id],
                             "started_at": (at + timedelta(milliseconds=200)).isoformat(),
                             "ended_at": (at + timedelta(seconds=1)).isoformat(),
                             "result": {"passed": passed,
                                        "failure_mode": None if passed else "clean_failure"}}) + "\n")
    assert fh is not None
    fh.write(json.dumps({"type": "run_end", "run_id": "growth",
                         "ended_at": (T0 + timedelta(seconds=2 * attempts + 5)).isoformat()}) + "\n")
    fh.close()
    return paths


class Meter:
    """Per attempt: wall time between the ends of consecutive record_outcome calls (the last of an
    attempt's four), and the shared buffers of the top-level statements in between."""

    def __init__(self) -> None:
        self.ms: list[float] = []
        self.blocks: list[int] = []
        self.pending_blocks = 0
        self.last = time.perf_counter()

    def notice(self, diag: psycopg.errors.Diagnostic) -> None:
        found = re.search(r"plan:\s*(\{.*\})\s*$", diag.message_primary or "", re.S)
        if found:
            plan = json.loads(found.group(1))["Plan"]
            self.pending_blocks += plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0)

    def attempt_done(self) -> None:
        now = time.perf_counter()
        self.ms.append((now - self.last) * 1000.0)
        self.blocks.append(self.pending_blocks)
        self.pending_blocks = 0
        self.last = now


def count_buffers(conn: psycopg.Connection) -> bool:
    """Log every top-level statement's plan with its buffers to this session as a notice."""
    try:
        conn.execute("LOAD 'auto_explain'")
    except psycopg.Error:
        conn.rollback()
        return False
    for name, value in (("log_min_duration", "0"), ("log_analyze", "on"), ("log_buffers", "on"),
                        ("log_timing", "off"), ("log_nested_statements", "off"), ("log_format", "json"),
                        ("log_level", "notice")):
        conn.execute(f"SET auto_explain.{name} = '{value}'")
    conn.execute("SET client_min_messages = notice")
    conn.commit()
    return True


def window(series: Sequence[float], end: int, size: int) -> float:
    return statistics.median(series[max(0, end - size):end])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=3000)
    parser.add_argument("--points", default="250,1000,3000", help="attempt counts to report at")
    parser.add_argument("--window", type=int, default=50, help="attempts in each point's median")
    parser.add_argument("--commit-every", type=int, default=0, help="attempts per file (0: one file)")
    parser.add_argument("--rules", type=int, default=200)
    parser.add_argument("--tips-per-rule", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-replan", action="store_true",
                        help="never plan again during the load, for comparison")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    points = [int(p) for p in args.points.split(",")]
    if max(points) > args.attempts:
        parser.error("a point lies beyond --attempts")

    meter = Meter()

    class MeteredClient(Client):
        def record_outcome(self, *a: Any, **k: Any) -> int:
            done = super().record_outcome(*a, **k)
            meter.attempt_done()
            return done

    loader.Client = MeteredClient  # type: ignore[misc]
    if args.no_replan:
        loader.REPLAN_FIRST = sys.maxsize
    with tempfile.TemporaryDirectory() as tmp, psycopg.connect() as conn:
        workdir = Path(tmp)
        conn.execute("SET client_min_messages = warning")
        held = conn.execute("SELECT count(*) FROM ctxgraph.tip_retrievals WHERE skill = %s", (SKILL,))
        if held.fetchone()[0]:
            print(f"per_call_growth: {SKILL} already holds retrievals; run it on a freshly deployed database",
                  file=sys.stderr)
            return 2
        tips = write_tips(workdir / "tips.jsonl", args.rules, args.tips_per_rule)
        logs = write_logs(workdir, tips, args.attempts, args.commit_every, random.Random(args.seed))
        refs = loader.load_tips(conn, SKILL, workdir / "tips.jsonl")
        conn.commit()
        buffers = count_buffers(conn)
        conn.add_notice_handler(meter.notice)
        began = time.perf_counter()
        meter.last = began
        for path in logs:
            loader.load_run(conn, SKILL, path, refs, bulk=False)
        total_s = time.perf_counter() - began

    assert len(meter.ms) == args.attempts, len(meter.ms)
    mode = f"files of {args.commit_every:,} attempts" if args.commit_every else "one transaction"
    if args.no_replan:
        mode += ", never replanned"
    out: dict[str, Any] = {"mode": mode, "attempts": args.attempts, "tips": args.rules * args.tips_per_rule,
                           "window": args.window, "total_s": total_s, "points": {}}
    for p in points:
        out["points"][p] = {"ms": window(meter.ms, p, args.window),
                            "blocks": window(meter.blocks, p, args.window) if buffers else None}
    first = out["points"][points[0]]
    heading = "".join(f"{'at ' + format(p, ','):>11}" for p in points)
    ratios = "".join(f"{format(p, ',') + '/' + format(points[0], ','):>13}" for p in points[1:])
    print(f"{mode}: {args.attempts:,} attempts of 5 tips out of {out['tips']:,}, {total_s:.1f} s"
          f" (median of the {args.window} attempts before each point)")
    print(f"  {'':<22}{heading}{ratios}")
    rows = [("ms per attempt", "ms", "{:.2f}")]
    if buffers:
        rows.append(("buffers per attempt", "blocks", "{:,.0f}"))
    for label, key, fmt in rows:
        values = "".join(f"{fmt.format(out['points'][p][key]):>11}" for p in points)
        rel = "".join(f"{out['points'][p][key] / first[key]:>12.2f}x" for p in points[1:])
        print(f"  {label:<22}{values}{rel}")
    if not buffers:
        print("  (buffers not counted: LOAD 'auto_explain' needs a superuser)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
