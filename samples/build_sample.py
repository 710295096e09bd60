#!/usr/bin/env python3
"""Assemble the STIG sample (samples/stig/) from its data files and fix scripts.

The sample is hand-written data (see samples/README.md for the layout):

    stig/tips.jsonl                 the tip corpus (read, and written back in canonical form)
    stig/data/runs.jsonl            one line per run: run_start fields, ended_at, notes
    stig/data/attempts.jsonl        one line per attempt, in log order: times, result, evaluator
                                    detail, retrieved tips with score and gold label
    stig/data/tip_groups.jsonl      the tip groups the README and the demo narrative use
    stig/data/README.template.md    stig/README.md, with str.format fields for the counts
    stig/scripts/<run>/<rule>/attempt-<n>.sh   the fix script the Worker submitted

This program only lays those pieces out as the published files (run-6.jsonl, run-7.jsonl,
gold_labels.csv, README.md, tips.jsonl), refusing data that would make them lie. The output is
deterministic; tests/test_sample_data.py checks that the committed files equal it byte for byte.

    python3 samples/build_sample.py                 # rewrite samples/stig/*
    python3 samples/build_sample.py --out DIR       # write the files to DIR instead
    python3 samples/check_sample.py                 # validate the published files, print counts

Standard library only.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent / "stig"
CHECK_ID = "xccdf_org.ssgproject.content_rule_{}"
GOLD_HEADER = ["run_id", "rule_id", "attempt_number", "tip_ref", "followed", "note"]
# What each tip group claims (README): some retrieval of every tip in the group was followed
# (True) or ignored (False) in an attempt whose result is one of these.
GROUP_CLAIMS = {
    "harmful": (True, {"health_failure"}),
    "misleading": (True, {"clean_failure", "evaluator_gap"}),
    "helpful": (True, {"pass"}),
    "lucky": (False, {"pass"}),
}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def to_jsonl(objs: list[dict]) -> str:
    return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs)


def script_path(src: Path, run_id: str, rule_id: str, n: int) -> Path:
    return src / "scripts" / run_id / rule_id / f"attempt-{n}.sh"


def outcome(a: dict) -> str:
    return "pass" if a["result"]["passed"] else a["result"]["failure_mode"]


def build_run(src: Path, run: dict, attempts: list[dict]) -> tuple[list[dict], list[list[str]]]:
    """One run log (lines in time order) and its gold label rows."""
    run_id = run["run_id"]
    start = {"type": "run_start", **{k: v for k, v in run.items() if k not in ("ended_at", "notes")}}
    body: list[tuple[str, dict]] = []   # (time that places the line, line)
    gold: list[list[str]] = []
    for a in attempts:
        rule, n = a["rule_id"], a["attempt_number"]
        head = {"run_id": run_id, "rule_id": rule, "attempt_number": n}
        body.append((a["retrieved_at"], {"type": "retrieval", **head, "retrieved_at": a["retrieved_at"],
                                         "tips": [{"tip_ref": t["tip_ref"], "similarity_score":
                                                   t["similarity_score"]} for t in a["tips"]]}))
        script = script_path(src, run_id, rule, n).read_text(encoding="utf-8")
        body.append((a["started_at"], {"type": "attempt", **head, "started_at": a["started_at"],
                                       "ended_at": a["ended_at"], "fix_script": script,
                                       "result": a["result"]}))
        if a["eval_detail"]:
            d = a["eval_detail"]
            body.append((d["at"], {"type": "eval_detail", **head, "at": d["at"],
                                   "check_id": CHECK_ID.format(rule), "result": outcome(a),
                                   "detail": d["detail"]}))
        gold += [[run_id, rule, str(n), t["tip_ref"], "true" if t["followed"] else "false", t["note"]]
                 for t in a["tips"]]
    # Notes go before the first line that is later than they are (all stamps share one format).
    notes = sorted(run["notes"], key=lambda note: note["at"])
    lines = [start]
    for at, line in body:
        while notes and notes[0]["at"] < at:
            lines.append({"type": "note", "run_id": run_id, **notes.pop(0)})
        lines.append(line)
    lines += [{"type": "note", "run_id": run_id, **note} for note in notes]
    passed = {a["rule_id"] for a in attempts if a["result"]["passed"]}
    lines.append({"type": "run_end", "run_id": run_id, "ended_at": run["ended_at"],
                  "rules_attempted": len({a["rule_id"] for a in attempts}), "rules_passed": len(passed),
                  "attempts": len(attempts)})
    return lines, gold


def check(src: Path, tips: list[dict], attempts: list[dict], groups: list[dict]) -> list[str]:
    """What the published files cannot show wrong on their own; check_sample.py checks the rest."""
    errors = []
    known = {t["tip_ref"] for t in tips}
    for a in attempts:
        unknown = {t["tip_ref"] for t in a["tips"]} - known
        if unknown:
            where = f"{a['run_id']} {a['rule_id']}#{a['attempt_number']}"
            errors.append(f"{where}: unknown tips {sorted(unknown)}")
    used = {script_path(src, a["run_id"], a["rule_id"], a["attempt_number"]) for a in attempts}
    for path in sorted(set((src / "scripts").rglob("*")) - used):
        if path.is_file():
            errors.append(f"{path.relative_to(src)}: no attempt in data/attempts.jsonl uses this script")
    rows = [(t["tip_ref"], t["followed"], outcome(a)) for a in attempts for t in a["tips"]]
    for g in groups:
        if g["group"] not in GROUP_CLAIMS:
            continue
        followed, results = GROUP_CLAIMS[g["group"]]
        for ref in g["tips"]:
            if not any(r == ref and f == followed and res in results for r, f, res in rows):
                verb = "followed" if followed else "ignored"
                errors.append(f"tip group {g['group']}: {ref} is never {verb} in an attempt with result "
                              f"{sorted(results)}")
    return errors


def stats(runs: dict[str, list[dict]], gold: dict[str, list[list[str]]], tips: list[dict]) -> dict:
    per_run = {}
    for run_id, lines in runs.items():
        atts = [ln for ln in lines if ln["type"] == "attempt"]
        rules = {ln["rule_id"] for ln in atts}
        passes = [ln["attempt_number"] for ln in atts if ln["result"]["passed"]]
        r = {"rules": len(rules), "attempts": len(atts),
             "retrievals": sum(len(ln["tips"]) for ln in lines if ln["type"] == "retrieval"),
             "passed": len(passes), "pass_at_1": sum(n == 1 for n in passes),
             "pass_at_2_3": sum(2 <= n <= 3 for n in passes), "pass_at_4plus": sum(n >= 4 for n in passes),
             "rules_never_passed": len(rules) - len(passes),
             "followed": sum(g[4] == "true" for g in gold[run_id]),
             "ignored": sum(g[4] == "false" for g in gold[run_id]),
             "long_scripts": sum(ln["fix_script"].count("\n") > 80 for ln in atts), "rule_set": rules}
        for mode in ("clean_failure", "evaluator_gap", "health_failure"):
            r[mode] = sum(ln["result"]["failure_mode"] == mode for ln in atts)
        per_run[run_id] = r
    retrieved = {t["tip_ref"] for lines in runs.values() for ln in lines if ln["type"] == "retrieval"
                 for t in ln["tips"]}
    general = sum(t["rule_id"] is None for t in tips)
    return {"runs": per_run, "rules_total": len(set().union(*(r["rule_set"] for r in per_run.values()))),
            "rules_shared": len(set.intersection(*(r["rule_set"] for r in per_run.values()))),
            "tips_total": len(tips), "tips_general": general, "tips_rule": len(tips) - general,
            "tips_retrieved": len(retrieved),
            "long_scripts": sum(r["long_scripts"] for r in per_run.values())}


def render_readme(template: str, run_meta: dict[str, dict], st: dict, groups: list[dict]) -> str:
    r6, r7 = st["runs"]["run-6"], st["runs"]["run-7"]
    total = {k: v + r7[k] for k, v in r6.items() if isinstance(v, int)}
    pct = {run_id: round(100 * r["followed"] / (r["followed"] + r["ignored"]))
           for run_id, r in st["runs"].items()}
    group_text = "\n".join(f"**{g['title']}.** {g['text']}\n" + ", ".join(f"`{t}`" for t in g["tips"]) + "\n"
                           for g in groups)
    return template.format(
        host=run_meta["run-6"]["host"], w6=run_meta["run-6"]["worker"], w7=run_meta["run-7"]["worker"],
        f6pct=pct["run-6"], f7pct=pct["run-7"], r6=r6, r7=r7, total=total, groups=group_text,
        **{k: v for k, v in st.items() if k != "runs"})


def build(src: Path, out: Path) -> dict:
    tips = read_jsonl(src / "tips.jsonl")
    run_list = read_jsonl(src / "data" / "runs.jsonl")
    attempts = read_jsonl(src / "data" / "attempts.jsonl")
    groups = read_jsonl(src / "data" / "tip_groups.jsonl")
    template = (src / "data" / "README.template.md").read_text(encoding="utf-8")
    errors = check(src, tips, attempts, groups)
    if errors:
        raise SystemExit("sample data is inconsistent:\n  - " + "\n  - ".join(errors))

    runs, gold = {}, {}
    for run in run_list:
        run_id = run["run_id"]
        runs[run_id], gold[run_id] = build_run(src, run, [a for a in attempts if a["run_id"] == run_id])
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(GOLD_HEADER)
    writer.writerows(row for rows in gold.values() for row in rows)
    st = stats(runs, gold, tips)
    files = {"tips.jsonl": to_jsonl(tips), "gold_labels.csv": buf.getvalue(),
             "README.md": render_readme(template, {r["run_id"]: r for r in run_list}, st, groups),
             **{f"{run_id}.jsonl": to_jsonl(lines) for run_id, lines in runs.items()}}
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8", newline="\n")
    print(f"wrote {out}: {st['tips_total']} tips, {st['rules_total']} rules, "
          + ", ".join(f"{k}: {v['attempts']} attempts / {v['retrievals']} retrievals"
                      for k, v in st["runs"].items()))
    return files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", type=Path, default=SRC, help="sample folder to read (%(default)s)")
    ap.add_argument("--out", type=Path, help="folder to write (default: the --src folder)")
    args = ap.parse_args(argv)
    build(args.src, args.out or args.src)
    return 0


if __name__ == "__main__":
    sys.exit(main())
