"""Benchmark: the scoring pass over 3,500 retrievals (the ADR's size of a full STIG run).

Builds a run of 700 attempts x 5 tips from the sample's real fix scripts (each script made distinct
by a line of its own, as retried scripts are), loads it through the write path into the database
named by DATABASE_URL, then measures, each on one run (ratios, never a pass/fail on a time):

1. the embedding leg (--no-judge) as it runs now: every distinct chunk of the run encoded once,
   length-sorted, through ctxgraph.chunk_embeddings, on the runtime the install set up; and, in
   the same process, the method before it (``embed_plan="batch"``: each claimed batch of 256 rows
   encoded on its own, torch float32, no cache), timed on a run of the first ``--before-sample``
   attempts (the same scripts) and scaled to the run by rows (it encodes every row's chunks, so its
   cost is linear in them); the run's cosines compared with those of the float32 model (torch,
   the current plan) on every row, and that reference with the method before on the sample's rows;
   then a second pass over the same rows, which must take every chunk from the cache;
2. the same leg on a run whose every script chunk is distinct (a marker line every 6 lines),
   against the ADR's method (encode the tip and the truncated script for every retrieval, torch),
   timed on a sample of retrievals and scaled to all of them (its cost is linear by construction);
3. peak memory of the pass, and of a pass over a run holding one giant script (26 MB), each in a
   process of its own;
4. the judge leg alone against a local OpenAI-compatible server that answers every request after a
   fixed delay (default 0.05 s), at the default concurrency of 8, beside the ideal (questions x delay
   / concurrency). The figure is the pass's overhead over that ideal; a longer delay only lengthens
   the wait (at 0.2 s, the ideal alone is 88 s of the bench).

Prints each goal beside its measurement. Used by scripts/bench.sh; run alone with DATABASE_URL set
to a deployed, throwaway database.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scorer"))
sys.path.insert(0, str(ROOT / "tests"))

from judge_stub_server import StubServer, slow, verdict  # noqa: E402

from ctxgraph import loader, scoring_pass  # noqa: E402
from ctxgraph.connection_store import connect  # noqa: E402

GB = 10**9


def sample_material() -> tuple[list[dict], list[str]]:
    tips = [json.loads(line) for line in (ROOT / "samples/stig/tips.jsonl").read_text().splitlines() if line]
    scripts = []
    for run in ("run-6", "run-7"):
        for line in (ROOT / f"samples/stig/{run}.jsonl").read_text().splitlines():
            item = json.loads(line)
            if item.get("type") == "attempt" and item.get("fix_script"):
                scripts.append(item["fix_script"])
    return tips, scripts


def all_distinct(script: str, n: int) -> str:
    """The script with a marker line of its own every 6 lines, so none of its chunks is shared."""
    lines = script.splitlines()
    out: list[str] = []
    for i, line in enumerate(lines):
        if i % 6 == 0:
            out.append(f"# attempt {n}, step {i}")
        out.append(line)
    return "\n".join(out) + "\n"


def build(workdir: Path, attempts: int, per_attempt: int, tag: str, distinct: bool = False,
          giant_mb: float = 0.0) -> tuple[Path, Path, str]:
    tips, scripts = sample_material()
    run_id = f"bench-{tag}-{int(time.time())}"
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
        if distinct:
            script = all_distinct(script, n)
        if giant_mb and n == 0:
            # One giant script: every sample script over and over, each copy marked, to giant_mb MB.
            parts, size, k = [], 0, 0
            while size < giant_mb * 1e6:
                part = all_distinct(scripts[k % len(scripts)], 10_000 + k)
                parts.append(part)
                size += len(part)
                k += 1
            script = "".join(parts)
        lines.append(json.dumps({"type": "attempt", "run_id": run_id, "rule_id": rule, "attempt_number": 1,
                                 "started_at": (at + timedelta(seconds=5)).isoformat(),
                                 "ended_at": (at + timedelta(minutes=2)).isoformat(),
                                 "fix_script": script, "result": {"passed": n % 3 != 0,
                                                                  "failure_mode": None if n % 3 else "clean_failure"}}))
    log_path = workdir / f"{run_id}.jsonl"
    log_path.write_text("\n".join(lines) + "\n")
    return tips_path, log_path, run_id


def load(conn, skill: str, tips_path: Path, log_path: Path) -> float:
    began = time.perf_counter()
    refs = loader.load_tips(conn, skill, tips_path)
    loader.load_run(conn, skill, log_path, refs)
    return time.perf_counter() - began


def reset(conn, skill: str, run_id: str, tips_too: bool) -> None:
    """Unscore the run (and forget tip vectors), as if the pass had never run; the chunk cache stays."""
    conn.execute("UPDATE ctxgraph.tip_retrievals SET tip_followed_computed_at = NULL, tip_followed_emb = NULL,"
                 " tip_followed_llm = NULL, follow_probability = NULL WHERE skill = %s AND run_id = %s",
                 (skill, run_id))
    if tips_too:
        conn.execute("UPDATE ctxgraph.tips SET embedding = NULL WHERE skill = %s", (skill,))
    conn.commit()


def cosines(conn, skill: str, run_id: str) -> dict[tuple[str, int], float | None]:
    """The run's cosines by (rule, rank): build() gives the n-th attempt of every run the same rule,
    tips and script, so two runs' rows meet there."""
    rows = conn.execute("SELECT rule_id, rank, tip_followed_emb FROM ctxgraph.tip_retrievals WHERE skill = %s"
                        " AND run_id = %s", (skill, run_id)).fetchall()
    conn.commit()
    return {(rule, int(rank)): v for rule, rank, v in rows}


def embed_pass(conn, skill: str, run_id: str, log_path: Path, **kwargs) -> scoring_pass.PassSummary:
    return scoring_pass.run_pass(conn, scoring_pass.PassConfig(skill=skill, run_id=run_id, log_path=log_path,
                                                               use_judge=False, **kwargs))


def adr_method(conn, skill: str, run_id: str, log_path: Path, sample: int) -> tuple[float, int, int]:
    """Seconds the ADR's method takes over ``sample`` retrievals: for each, the tip and the script are
    encoded together (the model truncates the script at 256 word pieces), torch, nothing reused."""
    from ctxgraph.embed import Embedder
    from ctxgraph.runlog import ScriptIndex, read_run_log

    index = ScriptIndex.from_run_log(read_run_log(log_path, run_id))
    rows = scoring_pass.Store(conn).scoring_candidates(skill, run_id)
    conn.commit()
    model = Embedder(runtime="torch")._model
    chosen = rows[:sample]
    began = time.perf_counter()
    for row in chosen:
        record = scoring_pass._script_for(row, index)
        if record is None or not record.fix_script:
            continue
        vecs = model.encode([row.tip_body, record.fix_script], batch_size=2, normalize_embeddings=True,
                            show_progress_bar=False)
        float(vecs[0] @ vecs[1])
    return time.perf_counter() - began, len(chosen), len(rows)


def child(args: argparse.Namespace) -> int:
    """One measured pass in this process alone: print its figures and the process's peak RSS as JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        tips_path, log_path, run_id = build(Path(tmp), args.attempts, args.tips_per_attempt,
                                            "giant" if args.giant_mb else "mem", giant_mb=args.giant_mb)
        conn = connect()
        load(conn, "stig", tips_path, log_path)
        log_path_size = log_path.stat().st_size
        # Encode the giant script here, not read it from a cache an earlier measurement left.
        conn.execute("TRUNCATE ctxgraph.chunk_embeddings")
        conn.commit()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        summary = embed_pass(conn, "stig", run_id, log_path, use_signal=not args.no_signal)
        conn.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"peak_bytes": peak, "peak_before_pass": before, "embed_seconds": summary.embed_seconds,
                      "total_seconds": summary.total_seconds, "runtime": summary.embed_runtime,
                      "scripts_capped": summary.scripts_capped, "chunks_encoded": summary.chunks_encoded,
                      "emb_written": summary.emb_written, "log_bytes": log_path_size}))
    return 0


def in_child(extra: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", *extra], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"measured child pass failed: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def verdict_word(ok: bool) -> str:
    return "met" if ok else "NOT met"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=700)
    parser.add_argument("--tips-per-attempt", type=int, default=5)
    parser.add_argument("--judge-delay", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--before-sample", type=int, default=140,
                        help="attempts the method before is timed on, scaled to the run (%(default)s; 0: all)")
    parser.add_argument("--adr-sample", type=int, default=350,
                        help="retrievals the ADR's method is timed on, scaled to the run (%(default)s; 0: all)")
    parser.add_argument("--giant-mb", type=float, default=26.0, help="size of the giant script (%(default)s MB)")
    parser.add_argument("--no-judge-leg", action="store_true", help="skip the judge leg's measurement")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-signal", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.child:
        return child(args)
    skill = "stig"  # the skill with a judge prompt; the database is a throwaway one

    # Peak memory first, each in a fresh process: the pass as an operator runs it, then the giant script.
    memory = in_child(["--attempts", str(args.attempts), "--tips-per-attempt", str(args.tips_per_attempt),
                       "--giant-mb", "0"])
    giant_args = ["--attempts", "3", "--tips-per-attempt", "5", "--giant-mb", str(args.giant_mb)]
    giant = in_child(giant_args)
    # The same without the follow signal, whose reading of a script is not capped: what the embedding
    # leg itself costs.
    giant_embed = in_child([*giant_args, "--no-signal"])

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tips_path, log_path, run_id = build(work, args.attempts, args.tips_per_attempt, "run")
        conn = connect()
        load_seconds = load(conn, skill, tips_path, log_path)
        rows = conn.execute("SELECT count(*) FROM ctxgraph.tip_retrievals WHERE skill = %s AND run_id = %s",
                            (skill, run_id)).fetchone()[0]
        conn.commit()
        # The cache starts empty for this run's chunks: the child passes above ran other run ids but the
        # same scripts, so drop what they cached.
        conn.execute("TRUNCATE ctxgraph.chunk_embeddings")
        conn.commit()

        # The method before, on a run of the first attempts' scripts (the whole run's when the sample
        # is not smaller), scaled to the run's rows.
        sample = args.before_sample if 0 < args.before_sample < args.attempts else args.attempts
        btips, blog, brun = build(work, sample, args.tips_per_attempt, "before")
        load(conn, skill, btips, blog)
        reset(conn, skill, brun, tips_too=True)
        before = embed_pass(conn, skill, brun, blog, embed_plan="batch")
        before_cosines = cosines(conn, skill, brun)
        before_seconds = before.embed_seconds * rows / max(len(before_cosines), 1)
        # The reference: the float32 model (torch) over every row of the run, by the current plan.
        reset(conn, skill, run_id, tips_too=True)
        embed_pass(conn, skill, run_id, log_path, embed_runtime="torch")
        reference = cosines(conn, skill, run_id)
        reference_gap = max((abs(reference[k] - v) for k, v in before_cosines.items()
                             if v is not None and reference.get(k) is not None), default=float("nan"))
        conn.execute("TRUNCATE ctxgraph.chunk_embeddings")
        conn.commit()
        reset(conn, skill, run_id, tips_too=True)
        now = embed_pass(conn, skill, run_id, log_path)
        current = cosines(conn, skill, run_id)
        reset(conn, skill, run_id, tips_too=False)
        again = embed_pass(conn, skill, run_id, log_path)
        deltas = [abs(current[i] - reference[i]) for i in reference
                  if reference[i] is not None and current[i] is not None]
        missing = sum(1 for i in reference if (reference[i] is None) != (current[i] is None))

        dtips, dlog, drun = build(work, args.attempts, args.tips_per_attempt, "distinct", distinct=True)
        load(conn, skill, dtips, dlog)
        distinct_now = embed_pass(conn, skill, drun, dlog)
        reset(conn, skill, drun, tips_too=False)
        adr_seconds, adr_rows, distinct_rows = adr_method(conn, skill, drun, dlog, args.adr_sample or 10**9)
        adr_scaled = adr_seconds * distinct_rows / max(adr_rows, 1)

        judge_only = None
        if not args.no_judge_leg:
            reset(conn, skill, run_id, tips_too=False)
            with StubServer() as server:
                server.responder = lambda request: slow(args.judge_delay, verdict(True))
                judge_only = scoring_pass.run_pass(conn, scoring_pass.PassConfig(
                    skill=skill, run_id=run_id, log_path=log_path, judge_url=server.base_url,
                    judge_model="stub-model", use_embed=False, concurrency=args.concurrency))
        conn.close()

    speed_now = before_seconds / now.embed_seconds
    speed_adr = adr_scaled / distinct_now.embed_seconds
    worst = max(deltas) if deltas else float("nan")
    print(f"scoring pass, {rows} retrievals ({args.attempts} attempts x {args.tips_per_attempt} tips), "
          f"loaded through the write path in {load_seconds:.1f} s")
    print(f"  embedding leg, the method before (per 256-row batch, torch, no cache): {before.embed_seconds:6.1f} s "
          f"encoding for {len(before_cosines)} retrievals ({len(before_cosines) / before.total_seconds:.0f} rows/s "
          f"in all), {before_seconds:6.1f} s scaled to {rows}")
    print(f"  embedding leg now ({now.embed_runtime}, {now.chunks_distinct} distinct chunks, length-sorted): "
          f"{now.embed_seconds:6.1f} s encoding, {now.total_seconds:6.1f} s total "
          f"({rows / now.total_seconds:.0f} rows/s); model {now.embed_model}")
    print(f"  second pass over the same rows: {again.chunks_encoded} chunks encoded, {again.chunks_cached} from "
          f"the cache, {again.embed_seconds:6.1f} s in the embedding leg")
    print(f"  every chunk distinct ({distinct_now.chunks_distinct} chunks): now {distinct_now.embed_seconds:6.1f} s; "
          f"the ADR's method {adr_seconds:.1f} s for {adr_rows} retrievals, {adr_scaled:.1f} s scaled to "
          f"{distinct_rows}")
    print(f"  giant script: {giant['log_bytes'] / 1e6:.0f} MB run log, pass {giant['total_seconds']:.1f} s "
          f"({giant['embed_seconds']:.1f} s embedding, {giant['scripts_capped']} script capped, "
          f"{giant['chunks_encoded']} chunks encoded), peak {giant['peak_bytes'] / GB:.2f} GB; without the "
          f"follow signal {giant_embed['total_seconds']:.1f} s, peak {giant_embed['peak_bytes'] / GB:.2f} GB")
    print("  goals:")
    print(f"    >= 3x faster than the method before on these {rows} retrievals: "
          f"{speed_now:.1f}x ({before_seconds:.1f} s -> {now.embed_seconds:.1f} s), {verdict_word(speed_now >= 3)}")
    print(f"    >= 10x faster than the ADR's method, every script distinct: {speed_adr:.1f}x "
          f"({adr_scaled:.1f} s -> {distinct_now.embed_seconds:.1f} s), {verdict_word(speed_adr >= 10)}")
    print(f"    cosines within 0.01 of torch float32: largest difference {worst:.2e} over {len(deltas)} cosines"
          f"{f', {missing} NULL on one side only' if missing else ''}, {verdict_word(worst <= 0.01 and not missing)} "
          f"(the float32 reference against the method before on its {len(before_cosines)} rows: {reference_gap:.1e})")
    print(f"    peak memory <= 1.5 GB: the pass {memory['peak_bytes'] / GB:.2f} GB, "
          f"{verdict_word(memory['peak_bytes'] <= 1.5 * GB)}; with a {args.giant_mb:.0f} MB script "
          f"{giant['peak_bytes'] / GB:.2f} GB, {verdict_word(giant['peak_bytes'] <= 1.5 * GB)} "
          f"(without the follow signal {giant_embed['peak_bytes'] / GB:.2f} GB, "
          f"{verdict_word(giant_embed['peak_bytes'] <= 1.5 * GB)})")
    if judge_only is not None:
        print(f"  judge leg alone:     {judge_only.total_seconds:6.1f} s total, {judge_only.judge_seconds:6.1f} s "
              f"judging, {judge_only.judge_calls} questions at {args.judge_delay:.2f} s each, concurrency "
              f"{args.concurrency} (ideal {judge_only.judge_calls * args.judge_delay / args.concurrency:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
