"""The attribution fit at bench size (`make bench`, part 7): ctxgraph.fit beside the released PL/pgSQL fit.

On a generated log (bench/generate.sql, the same seed in both databases): the numpy fit in full,
its read / fit / write split (median of --reps), its peak memory (a child process's maximum
resident set), a second call when nothing changed (fit_state only); then, when --released-db is
given (a database deployed to @v0.6.0 holding the same log), the released fit's
refresh_tip_effects on it once, and how far the two fits' numbers are apart (the numpy fit with the
nuisance fitting off, so both fit the same model); then the incremental refit twice, after new runs
holding 50,000 retrievals of every rule and after 50,000 of 25 rules (copies of the latest scored
runs), each beside a full fit of the same evidence and how far apart the two are. Each issue goal is
printed beside its measure. Nothing passes or fails on a time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scorer"))
from ctxgraph.fit import ensure_fit, fit_evidence  # noqa: E402
from ctxgraph.fit.store import read_evidence  # noqa: E402
from ctxgraph.fit.store import write_fit  # noqa: E402

SKILL = "stig"

# The child that measures peak memory: one full fit, then its maximum resident set in kB.
MEMORY_CHILD = """
import resource, sys
sys.path.insert(0, {scorer!r})
import psycopg
from ctxgraph.fit import ensure_fit
with psycopg.connect({dsn!r}, autocommit=True) as conn:
    ensure_fit(conn, {skill!r}, full=True)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def timed_fit(conn: psycopg.Connection, as_of: datetime, incremental: bool = False) -> dict[str, float]:
    began = time.perf_counter()
    evidence = read_evidence(conn, SKILL, as_of, previous=incremental)
    read = time.perf_counter()
    fit = fit_evidence(evidence)
    fitted = time.perf_counter()
    write_fit(conn, fit)
    written = time.perf_counter()
    return {"read_s": read - began, "fit_s": fitted - read, "write_s": written - fitted, "total_s": written - began,
            "rows": evidence.rows, "summary": {**fit.blame_summary, **fit.effect_parameters}}


# New evidence for the incremental refit: the attempts and retrievals of the latest fully scored
# runs copied into new runs after the log's end (new attempt ids, the same tips, outcomes and
# verdicts), through the triggers that keep the levels, until about %(retrievals)s retrievals;
# only the attempts of the first %(rules)s rules when that is not NULL.
NEW_RUNS = """
CREATE TEMP TABLE bench_template ON COMMIT DROP AS
WITH scored AS (
    SELECT r.run_id, count(*) AS retrievals
      FROM stig.tip_retrievals AS r
     WHERE r.attempt_id IS NOT NULL AND r.tip_followed_computed_at IS NOT NULL
       AND (%(rules)s::integer IS NULL OR r.rule_id IN (SELECT DISTINCT rule_id FROM stig.attempts ORDER BY rule_id
                                                        LIMIT %(rules)s::integer))
     GROUP BY r.run_id
    HAVING bool_and(r.tip_followed_computed_at IS NOT NULL)),
picked AS (SELECT run_id, sum(retrievals) OVER (ORDER BY run_id DESC) - retrievals AS before FROM scored)
SELECT run_id, %(tag)s || '-' || row_number() OVER (ORDER BY run_id) AS new_run FROM picked
 WHERE before < %(retrievals)s;
INSERT INTO stig.runs (id, started_at, ended_at)
SELECT new_run, now() - interval '2 hours', now() - interval '1 hour' FROM bench_template;
CREATE TEMP TABLE bench_attempts ON COMMIT DROP AS
SELECT a.id AS old_id, nextval('ctxgraph.attempts_id_seq') AS id, t.new_run, a.rule_id, a.attempt_number, a.passed,
       a.failure_mode
  FROM stig.attempts AS a JOIN bench_template AS t USING (run_id)
 WHERE %(rules)s::integer IS NULL OR a.rule_id IN (SELECT DISTINCT rule_id FROM stig.attempts ORDER BY rule_id
                                                    LIMIT %(rules)s::integer);
INSERT INTO stig.attempts (id, run_id, rule_id, attempt_number, passed, failure_mode, started_at, ended_at)
SELECT id, new_run, rule_id, attempt_number, passed, failure_mode, now() - interval '90 minutes',
       now() - interval '89 minutes' FROM bench_attempts;
INSERT INTO stig.tip_retrievals (run_id, attempt_id, tip_id, rule_id, rank, similarity_score, outcome_value,
                                 outcome_confidence, retrieved_at, tip_followed_llm, tip_followed_emb,
                                 tip_followed_computed_at, follow_probability)
SELECT a.new_run, a.id, r.tip_id, r.rule_id, r.rank, r.similarity_score, r.outcome_value, r.outcome_confidence,
       now() - interval '90 minutes', r.tip_followed_llm, r.tip_followed_emb, now() - interval '80 minutes',
       r.follow_probability
  FROM stig.tip_retrievals AS r JOIN bench_attempts AS a ON a.old_id = r.attempt_id;
"""


def add_runs(conn: psycopg.Connection, tag: str, retrievals: int, rules: int | None) -> dict:
    """Copy runs (NEW_RUNS) and return what was added."""
    with conn.transaction():
        for statement in NEW_RUNS.split(";\n"):
            if statement.strip():
                conn.execute(statement, {"tag": tag, "retrievals": retrievals, "rules": rules})
    return dict(zip(("runs", "rules", "retrievals"), conn.execute(
        "SELECT count(DISTINCT run_id), count(DISTINCT rule_id), count(*) FROM stig.tip_retrievals WHERE run_id LIKE %s",
        (tag + "-%",)).fetchone()))


def incremental_after(conn: psycopg.Connection, tag: str, retrievals: int, rules: int | None) -> dict:
    """New runs, then the incremental refit, then a full one of the same evidence, and how far apart."""
    added = add_runs(conn, tag, retrievals, rules)
    as_of = conn.execute("SELECT now()").fetchone()[0]
    changed = conn.execute("SELECT tips_changed FROM ctxgraph.fit_state(%s, %s)", (SKILL, as_of)).fetchone()[0]
    incremental = timed_fit(conn, as_of, incremental=True)
    ours = stored(conn)
    full = timed_fit(conn, as_of)
    theirs = stored(conn)
    both = [t for t in ours if ours[t][0] is not None and theirs[t][0] is not None]
    effect = np.array([abs(ours[t][0] - theirs[t][0]) for t in both])
    blame = np.array([abs(ours[t][2] - theirs[t][2]) for t in both if ours[t][2] is not None and theirs[t][2] is not None])
    s = incremental["summary"]
    return {"added": added, "tips_changed": changed, "incremental": {k: incremental[k] for k in (
                "read_s", "fit_s", "write_s", "total_s")},
            "full": {k: full[k] for k in ("read_s", "fit_s", "write_s", "total_s")},
            "kind": s.get("fit"), "refitted_tips": s.get("refitted_tips"), "sweeps": s.get("blame_sweeps"),
            "settled": s.get("blame_converged"), "full_sweeps": full["summary"].get("blame_sweeps"),
            "full_settled": full["summary"].get("blame_converged"),
            "effect_max_diff": float(effect.max()) if effect.size else None,
            "misleading_max_diff": float(blame.max()) if blame.size else None,
            "misleading_mean_diff": float(blame.mean()) if blame.size else None}


def stored(conn: psycopg.Connection) -> dict[int, tuple]:
    return {r[0]: r[1:] for r in conn.execute(
        "SELECT tip_id, effect, std_error, misleading_probability FROM ctxgraph.tip_effects WHERE skill = %s",
        (SKILL,)).fetchall()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="conninfo of the database deployed at HEAD with the log")
    parser.add_argument("--released-db", help="conninfo of one deployed to @v0.6.0 with the same log")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    out: dict = {}
    with psycopg.connect(args.db, autocommit=True) as conn:
        as_of = conn.execute("SELECT now()").fetchone()[0]
        out["retrievals"] = conn.execute("SELECT count(*) FROM ctxgraph.tip_retrievals WHERE skill = %s",
                                         (SKILL,)).fetchone()[0]
        runs = [timed_fit(conn, as_of) for _ in range(args.reps)]
        out["full_fit"] = {k: statistics.median(r[k] for r in runs) for k in ("read_s", "fit_s", "write_s", "total_s")}
        out["rows_read"] = runs[0]["rows"]
        out["summary"] = {k: runs[0]["summary"].get(k) for k in (
            "blame_method", "blame_sweeps", "blame_converged", "blame_moving_tips", "blame_last_tip_change",
            "fitted_judge_reliability", "fitted_misleading_failure", "iterations", "effects_converged")}
        began = time.perf_counter()
        again = ensure_fit(conn, SKILL)
        out["unchanged_s"] = time.perf_counter() - began
        out["unchanged_refitted"] = again.fitted
    child = subprocess.run([sys.executable, "-c", MEMORY_CHILD.format(scorer=str(ROOT / "scorer"), dsn=args.db,
                                                                      skill=SKILL)],
                           capture_output=True, text=True, check=True)
    out["peak_memory_mb"] = int(child.stdout.strip().splitlines()[-1]) / 1024
    if args.released_db:
        with psycopg.connect(args.released_db, autocommit=True) as old:
            began = time.perf_counter()
            old.execute("SELECT ctxgraph.refresh_tip_effects(%s, %s)", (SKILL, as_of))
            out["released_fit_s"] = time.perf_counter() - began
            theirs = stored(old)
        # The same model on both sides: the numpy fit told the nuisance quantities, as the release is.
        with psycopg.connect(args.db, autocommit=True) as conn:
            conn.execute("UPDATE ctxgraph.parameters SET value = 0"
                         " WHERE name IN ('blame.fit_judge_reliability', 'blame.fit_misleading_failure')")
            timed_fit(conn, as_of)
            ours = stored(conn)
        both = [t for t in ours if t in theirs and ours[t][0] is not None and theirs[t][0] is not None]
        effect = np.array([[ours[t][0], theirs[t][0]] for t in both])
        blame = np.array([[ours[t][2], theirs[t][2]] for t in both if ours[t][2] is not None and theirs[t][2] is not None])
        out["parity"] = {
            "tips": len(both),
            "effect_max_diff": float(np.max(np.abs(effect[:, 0] - effect[:, 1]))) if len(both) else None,
            "misleading_max_diff": float(np.max(np.abs(blame[:, 0] - blame[:, 1]))) if len(blame) else None,
            "misleading_over_0.01": int(np.sum(np.abs(blame[:, 0] - blame[:, 1]) > 0.01)) if len(blame) else None,
            "sides_of_0.5_differ": int(np.sum((blame[:, 0] > 0.5) != (blame[:, 1] > 0.5))) if len(blame) else None,
            "sides_of_0.6_differ": int(np.sum((blame[:, 0] > 0.6) != (blame[:, 1] > 0.6))) if len(blame) else None,
        }
    # The incremental refit, with the nuisance fitting as deployed: new runs of every rule holding
    # 50,000 retrievals (a run tries every rule in this log, so every rule's evidence changes), then
    # 50,000 retrievals of 25 rules only.
    with psycopg.connect(args.db, autocommit=True) as conn:
        conn.execute("UPDATE ctxgraph.parameters SET value = 1"
                     " WHERE name IN ('blame.fit_judge_reliability', 'blame.fit_misleading_failure')")
        timed_fit(conn, conn.execute("SELECT now()").fetchone()[0])
        out["incremental_every_rule"] = incremental_after(conn, "bench-new-all", 50_000, None)
        out["incremental_25_rules"] = incremental_after(conn, "bench-new-25", 50_000, 25)
    Path(args.json).write_text(json.dumps(out, indent=1, default=str) + "\n", encoding="utf-8")
    print(render(out))
    return 0


def render(out: dict) -> str:
    f = out["full_fit"]
    lines = [f"the attribution fit on {out['retrievals']:,} retrievals ({out['rows_read']:,} scored), median of "
             f"the full fits",
             f"  {'full fit (read + fit + write)':<48} {f['total_s']:>8.1f} s   (read {f['read_s']:.1f}, fit "
             f"{f['fit_s']:.1f}, write {f['write_s']:.1f})",
             f"  {'a second call, nothing changed':<48} {out['unchanged_s'] * 1000:>8.0f} ms  "
             f"(refitted: {out['unchanged_refitted']})",
             f"  {'peak memory of a full fit (child process)':<48} {out['peak_memory_mb']:>8.0f} MB"]
    s = out["summary"]
    lines.append(f"  blame {s['blame_method']}, {s['blame_sweeps']} sweeps, settled {s['blame_converged']}, "
                 f"{s.get('blame_moving_tips')} tips moving at the last sweep (largest step {s.get('blame_last_tip_change')}); "
                 f"effects {s['iterations']} Newton iterations; judge reliability fitted "
                 f"{s.get('fitted_judge_reliability')}, misleading failure {s.get('fitted_misleading_failure')}")
    if "released_fit_s" in out:
        p = out["parity"]
        lines.append(f"  {'released PL/pgSQL fit (@v0.6.0), same log':<48} {out['released_fit_s']:>8.1f} s   "
                     f"({out['released_fit_s'] / f['total_s']:.1f}x the numpy fit)")
        lines.append(f"  the two fits, same model, {p['tips']:,} tips: effects within {p['effect_max_diff']:.1e}, "
                     f"misleading probabilities within {p['misleading_max_diff']:.2g} ({p['misleading_over_0.01']} "
                     f"apart by more than 0.01; {p['sides_of_0.5_differ']} on other sides of 0.5, "
                     f"{p['sides_of_0.6_differ']} of 0.6)")
    goal = 10 if out["retrievals"] < 5_000_000 else 90
    lines.append("goals (issue: the attribution fit as a fast engine):")
    lines.append(f"  full fit <= {goal} s at this size{'':<27} {f['total_s']:>8.1f} s   "
                 f"{'met' if f['total_s'] <= goal else 'not met'}")
    lines.append(f"  peak memory of a 10M-row full fit <= 2 GB{'':<13} {out['peak_memory_mb']:>8.0f} MB  "
                 f"(at this size)")
    for key, what in (("incremental_every_rule", "of every rule"), ("incremental_25_rules", "of 25 rules")):
        inc = out.get(key)
        if not inc:
            continue
        a, i, fl = inc["added"], inc["incremental"], inc["full"]
        lines.insert(-3 if key == "incremental_every_rule" else -3,
                     f"  {'incremental refit, new runs ' + what:<48} {i['total_s']:>8.1f} s   (read {i['read_s']:.1f}, "
                     f"fit {i['fit_s']:.1f}, write {i['write_s']:.1f}; {a['retrievals']:,} new retrievals in {a['runs']} "
                     f"runs, {a['rules']} rules; {inc['tips_changed']:,} tips changed, {inc['refitted_tips']:,} refitted; "
                     f"{inc['sweeps']} sweeps, settled {inc['settled']})\n"
                     f"  {'  a full fit of the same evidence':<48} {fl['total_s']:>8.1f} s   ({inc['full_sweeps']} sweeps, "
                     f"settled {inc['full_settled']}); apart: effects {inc['effect_max_diff']:.1e}, misleading "
                     f"probabilities max {inc['misleading_max_diff']:.3f}, mean {inc['misleading_mean_diff']:.4f}")
    every = out.get("incremental_every_rule")
    if every:
        total = every["incremental"]["total_s"]
        lines.append(f"  incremental refit after one new 50,000-retrieval run <= 5 s at 10M  {total:>8.1f} s   "
                     f"({'met' if total <= 5 else 'not met'}{'' if out['retrievals'] >= 5_000_000 else ', at this size'}; "
                     f"its read of every changed rule's rows: {every['incremental']['read_s']:.1f} s)")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
