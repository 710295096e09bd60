#!/usr/bin/env python3
"""Validate the STIG sample data set in samples/stig/ and print its counts.

    python3 samples/check_sample.py            # validate + counts
    python3 samples/check_sample.py --report   # also per-tip figures (outcome-only vs follow-weighted)
    python3 samples/check_sample.py --dir PATH # another copy of the sample

Checks: tips are unique kebab-case refs; every tip in a retrieval exists; every retrieved tip has exactly
one gold label row and every gold row matches a retrieval; timestamps are ISO 8601 UTC with Z and strictly
increasing per file; run-7 is on a later day than run-6; run_start first and run_end last; a retrieval line
for the same rule and attempt comes right before each attempt, a few seconds earlier; attempt numbers run
1, 2, 3 ... per rule, a rule's attempts are consecutive and nothing follows a pass; results carry a valid
failure mode; fix scripts are bash with strict mode; the ADR witness behaves as the story says; and the size
targets of the brief are met. Unknown line types are skipped, as any reader of the log must.

Standard library only. Exit status 0 when clean, 1 when any check fails.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path

WITNESS = "harden_sshd_macs_openssh_conf_crypto_policy"
RUNS = ("run-6", "run-7")
MODES = ("clean_failure", "evaluator_gap", "health_failure")
TS_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
GOLD_HEADER = ["run_id", "rule_id", "attempt_number", "tip_ref", "followed", "note"]
TIME_FIELD = {"run_start": "started_at", "retrieval": "retrieved_at", "attempt": "started_at",
              "run_end": "ended_at"}
MAX_RETRIEVAL_LEAD_S = 60


class Checker:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def err(self, msg: str) -> None:
        self.errors.append(msg)

    def ok(self, cond, msg: str) -> bool:
        if not cond:
            self.err(msg)
        return bool(cond)


def parse_ts(ck: Checker, value, where: str) -> datetime | None:
    if not isinstance(value, str) or not TS_RE.match(value):
        ck.err(f"{where}: timestamp {value!r} is not ISO 8601 UTC with Z")
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(timezone.utc)


def load_jsonl(ck: Checker, path: Path) -> list[dict]:
    out = []
    if not ck.ok(path.exists(), f"missing file {path}"):
        return out
    with path.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                ck.err(f"{path.name}:{i}: empty line")
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                ck.err(f"{path.name}:{i}: invalid JSON ({e})")
                continue
            if not isinstance(obj, dict):
                ck.err(f"{path.name}:{i}: not a JSON object")
                continue
            obj["_line"] = i
            out.append(obj)
    return out


def check_tips(ck: Checker, tips: list[dict]) -> dict[str, dict]:
    by_ref: dict[str, dict] = {}
    for t in tips:
        where = f"tips.jsonl:{t['_line']}"
        ref = t.get("tip_ref")
        if not ck.ok(isinstance(ref, str) and KEBAB.match(ref or ""), f"{where}: bad tip_ref {ref!r}"):
            continue
        ck.ok(ref not in by_ref, f"{where}: duplicate tip_ref {ref}")
        ck.ok(t.get("rule_id") is None or isinstance(t.get("rule_id"), str), f"{where}: bad rule_id")
        body = t.get("body")
        ck.ok(isinstance(body, str) and len(body.strip()) >= 20, f"{where}: body missing or too short")
        by_ref[ref] = t
    return by_ref


def check_run(ck: Checker, run_id: str, lines: list[dict], tips: dict[str, dict]) -> dict:
    """Validate one run log; return its retrievals and attempts."""
    name = f"{run_id}.jsonl"
    res = {"retrievals": [], "attempts": [], "start": None, "skipped_types": Counter()}
    if not lines:
        ck.err(f"{name}: empty")
        return res
    ck.ok(lines[0].get("type") == "run_start", f"{name}: first line is not run_start")
    ck.ok(lines[-1].get("type") == "run_end", f"{name}: last line is not run_end")

    prev_t: datetime | None = None
    prev_where = ""
    pending: dict | None = None        # the retrieval waiting for its attempt
    attempts_by_rule: dict[str, list[dict]] = defaultdict(list)
    finished_rules: set[str] = set()   # rules whose block of attempts is over
    current_rule: str | None = None

    for obj in lines:
        where = f"{name}:{obj['_line']}"
        typ = obj.get("type")
        ck.ok(obj.get("run_id") == run_id, f"{where}: run_id {obj.get('run_id')!r} != {run_id}")

        # every line's own time field must move strictly forward
        field = TIME_FIELD.get(typ, "at")
        stamps = []
        if field in obj:
            stamps.append(parse_ts(ck, obj[field], f"{where} {field}"))
        elif typ in TIME_FIELD:
            ck.err(f"{where}: {typ} without {field}")
        if typ == "attempt":
            stamps.append(parse_ts(ck, obj.get("ended_at"), f"{where} ended_at"))
        for t in stamps:
            if t is None:
                continue
            if prev_t is not None and not t > prev_t:
                ck.err(f"{where}: timestamp {t:%Y-%m-%dT%H:%M:%SZ} not after {prev_where}")
            prev_t, prev_where = t, f"{where}"

        if typ == "run_start":
            res["start"] = parse_ts(ck, obj.get("started_at"), where)
        elif typ == "retrieval":
            ck.ok(pending is None, f"{where}: retrieval while an earlier retrieval has no attempt yet")
            rule, n, tl = obj.get("rule_id"), obj.get("attempt_number"), obj.get("tips")
            ok = ck.ok(isinstance(rule, str) and rule, f"{where}: retrieval without rule_id")
            ok &= ck.ok(isinstance(n, int) and n >= 1, f"{where}: bad attempt_number {n!r}")
            ok &= ck.ok(isinstance(tl, list) and 3 <= len(tl) <= 5, f"{where}: needs 3-5 tips")
            if not ok:
                continue
            refs, scores = [], []
            for tip in tl:
                ref, s = tip.get("tip_ref"), tip.get("similarity_score")
                ck.ok(ref in tips, f"{where}: unknown tip_ref {ref!r}")
                ck.ok(isinstance(s, (int, float)) and 0.35 <= s <= 0.95,
                      f"{where}: similarity {s!r} of {ref} outside 0.35-0.95")
                refs.append(ref)
                scores.append(s if isinstance(s, (int, float)) else 0)
            ck.ok(len(set(refs)) == len(refs), f"{where}: a tip is retrieved twice")
            ck.ok(scores == sorted(scores, reverse=True), f"{where}: tips not in rank (score) order")
            pending = {"rule_id": rule, "attempt_number": n, "refs": refs, "scores": scores,
                       "t": parse_ts(ck, obj["retrieved_at"], where), "where": where}
            res["retrievals"].append(pending)
        elif typ == "attempt":
            rule, n = obj.get("rule_id"), obj.get("attempt_number")
            if not ck.ok(pending is not None, f"{where}: attempt without a preceding retrieval"):
                continue
            ck.ok(pending["rule_id"] == rule and pending["attempt_number"] == n,
                  f"{where}: preceding retrieval is for {pending['rule_id']}#{pending['attempt_number']}, "
                  f"attempt is {rule}#{n}")
            started = parse_ts(ck, obj.get("started_at"), where)
            ended = parse_ts(ck, obj.get("ended_at"), where)
            if started and pending["t"]:
                lead = (started - pending["t"]).total_seconds()
                ck.ok(0 < lead <= MAX_RETRIEVAL_LEAD_S,
                      f"{where}: retrieval is {lead:.0f}s before the attempt (want 1-{MAX_RETRIEVAL_LEAD_S}s)")
            if started and ended:
                ck.ok(ended > started, f"{where}: ended_at not after started_at")
            # a rule's attempts are one consecutive block, numbered from 1, nothing after a pass
            if rule != current_rule:
                if current_rule is not None:
                    finished_rules.add(current_rule)
                ck.ok(rule not in finished_rules, f"{where}: attempts of {rule} are not consecutive")
                current_rule = rule
            prior = attempts_by_rule[rule]
            ck.ok(n == len(prior) + 1, f"{where}: attempt_number {n} for {rule}, expected {len(prior) + 1}")
            if prior and prior[-1]["passed"]:
                ck.err(f"{where}: attempt after {rule} already passed")
            result = obj.get("result") or {}
            passed, mode = result.get("passed"), result.get("failure_mode")
            if ck.ok(isinstance(passed, bool), f"{where}: result.passed must be a boolean"):
                if passed:
                    ck.ok(mode is None, f"{where}: passed but failure_mode {mode!r}")
                else:
                    ck.ok(mode in MODES, f"{where}: failure_mode {mode!r} not one of {MODES}")
            script = obj.get("fix_script")
            if ck.ok(isinstance(script, str) and script.strip(), f"{where}: fix_script missing"):
                ck.ok(script.startswith("#!/usr/bin/env bash\n"), f"{where}: script lacks the bash shebang")
                ck.ok("set -euo pipefail" in script, f"{where}: script lacks set -euo pipefail")
                ck.ok(script.count("\n") >= 10, f"{where}: script shorter than 10 lines")
            att = {"rule_id": rule, "attempt_number": n, "passed": passed, "mode": mode,
                   "script": script or "", "refs": pending["refs"], "where": where}
            prior.append(att)
            res["attempts"].append(att)
            pending = None
        elif typ == "run_end":
            pass
        else:
            res["skipped_types"][typ] += 1   # note, eval_detail, anything newer: skip

    ck.ok(pending is None, f"{name}: last retrieval has no attempt")
    return res


def check_gold(ck: Checker, path: Path, runs: dict[str, dict]) -> dict[tuple, bool]:
    labels: dict[tuple, bool] = {}
    if not ck.ok(path.exists(), f"missing file {path}"):
        return labels
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    if not ck.ok(rows and rows[0] == GOLD_HEADER, f"gold_labels.csv: header must be {','.join(GOLD_HEADER)}"):
        return labels
    for i, row in enumerate(rows[1:], 2):
        where = f"gold_labels.csv:{i}"
        if not ck.ok(len(row) == 6, f"{where}: {len(row)} fields"):
            continue
        run_id, rule, n, ref, followed, note = row
        if not ck.ok(n.isdigit(), f"{where}: attempt_number {n!r}"):
            continue
        key = (run_id, rule, int(n), ref)
        ck.ok(key not in labels, f"{where}: duplicate label for {key}")
        ck.ok(followed in ("true", "false"), f"{where}: followed must be true/false, got {followed!r}")
        ck.ok(bool(note.strip()), f"{where}: empty note")
        labels[key] = followed == "true"
    expected = {(run_id, r["rule_id"], r["attempt_number"], ref)
                for run_id, res in runs.items() for r in res["retrievals"] for ref in r["refs"]}
    for key in sorted(expected - labels.keys()):
        ck.err(f"gold_labels.csv: no label for retrieval {key}")
    for key in sorted(labels.keys() - expected):
        ck.err(f"gold_labels.csv: label {key} matches no retrieval")
    return labels


def check_witness(ck: Checker, runs: dict[str, dict], tips: dict[str, dict], labels: dict) -> None:
    own = sorted(ref for ref, t in tips.items() if t.get("rule_id") == WITNESS)
    ck.ok(len(own) == 5, f"witness: expected 5 tips for {WITNESS}, found {len(own)}")
    orders = set()
    for run_id, res in runs.items():
        rets = [r for r in res["retrievals"] if r["rule_id"] == WITNESS]
        ck.ok(bool(rets), f"witness: no retrieval for {WITNESS} in {run_id}")
        for r in rets:
            orders.add(tuple(r["refs"]))
            ck.ok(sorted(r["refs"]) == own, f"witness: {r['where']} retrieves {r['refs']}, not its five tips")
    ck.ok(len(orders) == 1, f"witness: rank order differs between retrievals: {sorted(orders)}")
    for ref in own:
        body = tips[ref]["body"]
        ck.ok("update-crypto-policies" in body, f"witness: {ref} does not advise update-crypto-policies")

    a6 = [a for a in runs.get("run-6", {}).get("attempts", []) if a["rule_id"] == WITNESS]
    if ck.ok(len(a6) == 1, f"witness: run-6 should have exactly 1 attempt, has {len(a6)}"):
        a = a6[0]
        ck.ok(a["passed"] is True, "witness: run-6 attempt 1 should pass")
        ck.ok(re.search(r"cat <<EOF > /etc/ssh/ssh_config", a["script"]) is not None,
              "witness: run-6 script should overwrite ssh_config with cat <<EOF > /etc/ssh/ssh_config")
        ck.ok("update-crypto-policies" not in a["script"], "witness: run-6 script must not use the policy")
        ck.ok(not re.search(r"^\s*Include", a["script"], re.M), "witness: run-6 ssh_config keeps an Include")
        for ref in a["refs"]:
            ck.ok(labels.get(("run-6", WITNESS, 1, ref)) is False, f"witness: run-6 label for {ref} must be false")
    a7 = [a for a in runs.get("run-7", {}).get("attempts", []) if a["rule_id"] == WITNESS]
    if ck.ok(len(a7) == 3, f"witness: run-7 should have exactly 3 attempts, has {len(a7)}"):
        for a in a7:
            ck.ok(a["passed"] is False and a["mode"] == "clean_failure",
                  f"witness: run-7 attempt {a['attempt_number']} should be a clean_failure")
            ck.ok("update-crypto-policies --set" in a["script"],
                  f"witness: run-7 attempt {a['attempt_number']} should use update-crypto-policies")
            ck.ok(not re.search(r"> */etc/ssh/ssh_config\b", a["script"]),
                  f"witness: run-7 attempt {a['attempt_number']} must not overwrite ssh_config")
            for ref in a["refs"]:
                ck.ok(labels.get(("run-7", WITNESS, a["attempt_number"], ref)) is True,
                      f"witness: run-7 attempt {a['attempt_number']} label for {ref} must be true")


def graded(passed: bool, mode: str | None, n: int) -> float:
    """DEF-26 graded outcome (stig)."""
    if passed:
        return 1.0 if n == 1 else 0.8 if n <= 3 else 0.5
    return -0.2 if mode == "health_failure" else 0.0


def counts(runs: dict[str, dict], tips: dict[str, dict], labels: dict) -> dict:
    c: dict = {"runs": {}}
    for run_id, res in runs.items():
        atts = res["attempts"]
        rules = {a["rule_id"] for a in atts}
        passes = [a["attempt_number"] for a in atts if a["passed"]]
        lab = [v for (r, *_), v in labels.items() if r == run_id]
        c["runs"][run_id] = {
            "rules": len(rules), "attempts": len(atts), "retrieval lines": len(res["retrievals"]),
            "retrievals (tip rows)": sum(len(r["refs"]) for r in res["retrievals"]),
            "passed": len(passes), "passed at 1": sum(n == 1 for n in passes),
            "passed at 2-3": sum(2 <= n <= 3 for n in passes), "passed at 4+": sum(n >= 4 for n in passes),
            "rules never passed": len(rules) - len(passes),
            **{m: sum(a["mode"] == m for a in atts) for m in MODES},
            "followed": sum(lab), "ignored": len(lab) - sum(lab),
            "scripts > 80 lines": sum(a["script"].count("\n") > 80 for a in atts),
            "other lines skipped": sum(res["skipped_types"].values()),
        }
    c["rules"] = len({a["rule_id"] for res in runs.values() for a in res["attempts"]})
    c["tips"] = len(tips)
    c["general tips"] = sum(t.get("rule_id") is None for t in tips.values())
    c["tips retrieved"] = len({ref for res in runs.values() for r in res["retrievals"] for ref in r["refs"]})
    per_rule = Counter(t["rule_id"] for t in tips.values() if t.get("rule_id"))
    c["rules with 2-5 own tips"] = sum(2 <= v <= 5 for v in per_rule.values())
    return c


def check_targets(ck: Checker, c: dict, runs: dict[str, dict]) -> None:
    ck.ok(c["rules"] >= 22, f"targets: {c['rules']} rules, want >= 22")
    ck.ok(c["tips"] >= 64, f"targets: {c['tips']} tips, want >= 64")
    for run_id, r in c["runs"].items():
        ck.ok(r["rules"] >= 20, f"targets: {run_id} covers {r['rules']} rules, want >= 20")
    total = sum(r["retrievals (tip rows)"] for r in c["runs"].values())
    ck.ok(250 <= total <= 400, f"targets: {total} retrievals in total, want 250-400")
    long_scripts = sum(r["scripts > 80 lines"] for r in c["runs"].values())
    ck.ok(long_scripts >= 10, f"targets: {long_scripts} scripts longer than 80 lines, want >= 10")
    r6, r7 = c["runs"].get("run-6"), c["runs"].get("run-7")
    if r6 and r7:
        rate6 = r6["followed"] / max(1, r6["followed"] + r6["ignored"])
        rate7 = r7["followed"] / max(1, r7["followed"] + r7["ignored"])
        ck.ok(rate7 > rate6, f"targets: run-7 should follow tips more often ({rate7:.2f} vs {rate6:.2f})")
        ck.ok(r7["health_failure"] > 0, "targets: no health_failure in run-7")
    s6, s7 = runs["run-6"]["start"], runs["run-7"]["start"]
    if s6 and s7:
        ck.ok(s7.date() > s6.date(), "targets: run-7 must be on a later day than run-6")


def report(runs: dict[str, dict], tips: dict[str, dict], labels: dict) -> None:
    """Per tip: outcome-only (binary, pre-ADR) vs graded x follow (DEF-26/27 with gold labels)."""
    stat: dict[str, dict] = defaultdict(lambda: {"n": 0, "fol": 0, "bin": 0.0, "fw": 0.0, "harm": 0})
    for run_id, res in runs.items():
        for a in res["attempts"]:
            g = graded(a["passed"], a["mode"], a["attempt_number"])
            for ref in a["refs"]:
                f = labels.get((run_id, a["rule_id"], a["attempt_number"], ref), False)
                s = stat[ref]
                s["n"] += 1
                s["fol"] += f
                s["bin"] += 1.0 if a["passed"] else 0.0
                s["fw"] += g * (1.0 if f else 0.0)
                s["harm"] += bool(f and a["mode"] == "health_failure")
    print("\nper tip (sorted by outcome-only minus follow-weighted, i.e. the misleading-tip signal):")
    print(f"{'tip_ref':34} {'n':>3} {'follow':>6} {'outcome':>7} {'fw':>6} {'harm':>4}")
    rows = sorted(stat.items(), key=lambda kv: (kv[1]["fw"] - kv[1]["bin"]) / kv[1]["n"])
    for ref, s in rows:
        print(f"{ref:34} {s['n']:>3} {s['fol'] / s['n']:>6.2f} {s['bin'] / s['n']:>7.2f} "
              f"{s['fw'] / s['n']:>6.2f} {s['harm']:>4}")
    never = sorted(set(tips) - set(stat))
    if never:
        print(f"never retrieved: {', '.join(never)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", type=Path, default=Path(__file__).resolve().parent / "stig")
    ap.add_argument("--report", action="store_true", help="print per-tip outcome vs follow figures")
    args = ap.parse_args(argv)

    ck = Checker()
    tips = check_tips(ck, load_jsonl(ck, args.dir / "tips.jsonl"))
    runs = {run_id: check_run(ck, run_id, load_jsonl(ck, args.dir / f"{run_id}.jsonl"), tips)
            for run_id in RUNS}
    labels = check_gold(ck, args.dir / "gold_labels.csv", runs)
    check_witness(ck, runs, tips, labels)
    c = counts(runs, tips, labels)
    check_targets(ck, c, runs)
    ck.ok((args.dir / "README.md").exists(), "missing README.md")

    print(f"sample: {args.dir}")
    print(f"rules: {c['rules']}   tips: {c['tips']} ({c['general tips']} general, "
          f"{c['tips retrieved']} retrieved at least once; {c['rules with 2-5 own tips']} rules with 2-5 own tips)")
    keys = list(next(iter(c["runs"].values())).keys())
    print(f"{'':26}" + "".join(f"{r:>9}" for r in c["runs"]) + f"{'total':>9}")
    for k in keys:
        vals = [c["runs"][r][k] for r in c["runs"]]
        total = "" if k == "rules" else sum(vals)
        print(f"{k:26}" + "".join(f"{v:>9}" for v in vals) + f"{total:>9}")
    if args.report:
        report(runs, tips, labels)

    if ck.errors:
        print(f"\n{len(ck.errors)} problem(s):", file=sys.stderr)
        for e in ck.errors:
            print(f"  - {e}", file=sys.stderr)
        return 1
    print("\nOK: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
