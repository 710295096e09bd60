"""Benchmark: the scoring pass over 3,500 retrievals (the ADR's size of a full STIG run).

Builds a run of 700 attempts x 5 tips from the sample's real fix scripts (each script made distinct),
loads it through the write path into the database named by DATABASE_URL, then times:

1. the embedding leg alone (--no-judge);
2. the judge leg alone against a local OpenAI-compatible server that answers every request after a
   fixed delay (default 0.2 s), at the default concurrency of 8.

Prints seconds per leg and rows per second. Used by scripts/bench.sh; run alone with
DATABASE_URL set to a deployed, throwaway database.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scorer"))
sys.path.insert(0, str(ROOT / "tests"))

from judge_stub_server import StubServer, slow, verdict  # noqa: E402

from ctxgraph import scoring_pass, loader  # noqa: E402
from ctxgraph.store import connect  # noqa: E402


def sample_material() -> tuple[list[dict], list[str]]:
    tips = [json.loads(line) for line in (ROOT / "samples/stig/tips.jsonl").read_text().splitlines() if line]
    scripts = []
    for run in ("run-6", "run-7"):
        for line in (ROOT / f"samples/stig/{run}.jsonl").read_text().splitlines():
            item = json.loads(line)
            if item.get("type") == "attempt" and item.get("fix_script"):
                scripts.append(item["fix_script"])
    return tips, scripts


def build(workdir: Path, attempts: int, per_attempt: int) -> tuple[Path, Path, str]:
    tips, scripts = sample_material()
    run_id = f"bench-run-{int(time.time())}"
    base = datetime(2026, 6, 1, tzinfo=timezone.utc)
    tips_path = workdir / "tips.jsonl"
    tips_path.write_text("".join(json.dumps(t) + "\n" for t in tips))
    lines = []
    for n in range(attempts):
        rule = f"bench_rule_{n}"
        at = base + timedelta(minutes=3 * n)
        chosen = [tips[(n * 7 + k * 13) % len(tips)] for k in range(per_attempt)]
        lines.append(json.dumps({"type": "retrieval", "run_id": run_id, "rule_id": rule, "attempt_number": 1,
                                 "retrieved_at": at.isoformat(),
                                 "tips": [{"tip_ref": t["tip_ref"], "similarity_score": 0.9 - 0.05 * k}
                                          for k, t in enumerate(chosen)]}))
        script = scripts[n % len(scripts)] + f"\n# attempt {n}: verify\ntest -f /etc/stig-{n}.done || true\n"
        lines.append(json.dumps({"type": "attempt", "run_id": run_id, "rule_id": rule, "attempt_number": 1,
                                 "started_at": (at + timedelta(seconds=5)).isoformat(),
                                 "ended_at": (at + timedelta(minutes=2)).isoformat(),
                                 "fix_script": script, "result": {"passed": n % 3 != 0,
                                                                  "failure_mode": None if n % 3 else "clean_failure"}}))
    log_path = workdir / f"{run_id}.jsonl"
    log_path.write_text("\n".join(lines) + "\n")
    return tips_path, log_path, run_id


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=700)
    parser.add_argument("--tips-per-attempt", type=int, default=5)
    parser.add_argument("--judge-delay", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    with tempfile.TemporaryDirectory() as tmp:
        tips_path, log_path, run_id = build(Path(tmp), args.attempts, args.tips_per_attempt)
        conn = connect()
        skill = "stig"  # the skill with a judge prompt; the database is a throwaway one
        began = time.perf_counter()
        refs = loader.load_tips(conn, skill, tips_path)
        loader.load_run(conn, skill, log_path, refs)
        load_seconds = time.perf_counter() - began
        rows = conn.execute("SELECT count(*) FROM ctxgraph.tip_retrievals WHERE skill = %s", (skill,)).fetchone()[0]
        conn.commit()

        embed_only = scoring_pass.run_pass(conn, scoring_pass.PassConfig(skill=skill, run_id=run_id, log_path=log_path,
                                                           use_judge=False))
        conn.execute("UPDATE ctxgraph.tip_retrievals SET tip_followed_computed_at = NULL, tip_followed_emb = NULL"
                     " WHERE skill = %s", (skill,))
        conn.commit()
        with StubServer() as server:
            server.responder = lambda request: slow(args.judge_delay, verdict(True))
            judge_only = scoring_pass.run_pass(conn, scoring_pass.PassConfig(
                skill=skill, run_id=run_id, log_path=log_path, judge_url=server.base_url,
                judge_model="stub-model", use_embed=False, concurrency=args.concurrency))
        conn.close()

    print(f"scoring pass, {rows} retrievals ({args.attempts} attempts x {args.tips_per_attempt} tips), "
          f"loaded through the write path in {load_seconds:.1f} s")
    print(f"  embedding leg alone: {embed_only.total_seconds:6.1f} s total, {embed_only.embed_seconds:6.1f} s "
          f"encoding ({rows / embed_only.total_seconds:.0f} rows/s); model {embed_only.embed_model}")
    print(f"  judge leg alone:     {judge_only.total_seconds:6.1f} s total, {judge_only.judge_seconds:6.1f} s "
          f"judging, {judge_only.judge_calls} questions at {args.judge_delay:.2f} s each, concurrency "
          f"{args.concurrency} (ideal {judge_only.judge_calls * args.judge_delay / args.concurrency:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
