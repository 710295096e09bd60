"""A grid of simulated worlds around the default one, one line each (run by `make bench`).

Each world changes one thing from samples/worlds/default.json: the Worker's obedience (low flat, the
default rising 0.3 -> 0.7, high flat), tips retrieved per attempt (5, 3), the judge's accuracy (1.0,
0.9, 0.7) or no judge at all (embedding only); the judge-0.7 and embedding-only worlds are run again
with the blame model's reliability parameter set to what the world's verdicts really are, to show
what that knob is worth. After them, the nuisance worlds (samples/worlds/nuisance.json at seeds 1
and 2, nuisance_mild.json at seed 1, whatever --seed says), where the blame model's fixed assumptions
are wrong: a judge less reliable than blame.judge_reliability, a misleading tip that fails less often
than blame.misleading_failure, rules that nothing passes and general tips shown beside every rule's.
ctxgraph is deployed once into a template database and every world runs on its own clone, dropped
afterwards.

    python bench/simulate_grid.py [--seed N] [--deploy-to CHANGE] [--baseline CHANGE] [--json FILE]

--baseline @v0.5.0 adds one line: the default world on a database deployed only up to that change
(the release before the blame model: eviction on the effect's upper bound), the "before" beside the
grid's "after"; @v0.4.0 is the release before the effects.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scorer"))

from ctxgraph import simulate  # noqa: E402

GRID: list[tuple[str, dict]] = [
    ("default (obedience 0.3->0.7, k=5, judge 0.9)", {}),
    ("obedience low 0.3", {"obedience": 0.3}),
    ("obedience high 0.8", {"obedience": 0.8}),
    ("tips per attempt 3", {"tips_per_attempt": 3}),
    ("judge 1.0", {"judge_accuracy": 1.0}),
    ("judge 0.7", {"judge_accuracy": 0.7}),
    # The blame model reads the judge's reliability from blame.judge_reliability (0.9): the same
    # world with the parameter set to the judge it has.
    ("judge 0.7, blame.judge_reliability 0.7", {"judge_accuracy": 0.7,
                                               "parameters": {"blame.judge_reliability": 0.7}}),
    ("embedding only (separation 0.4)", {"embedding_only": True}),
    ("embedding only, blame.embedding_rel. 0.9", {"embedding_only": True,
                                                  "parameters": {"blame.embedding_reliability": 0.9}}),
    ("tips per attempt 3, judge 0.7", {"tips_per_attempt": 3, "judge_accuracy": 0.7}),
]

# World files run as they are, each at its own seed (not --seed): the label names the file and the seed.
WORLDS_DIR = simulate.DEFAULT_WORLD_PATH.parent
NUISANCE: list[tuple[str, str, int]] = [
    ("nuisance.json, seed 1", "nuisance.json", 1),
    ("nuisance.json, seed 2", "nuisance.json", 2),
    ("nuisance_mild.json, seed 1", "nuisance_mild.json", 1),
]


def fmt(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def line(label: str, m: dict) -> str:
    sp = m["spearman"]
    ev = m["eviction"]
    cells = [label[:44].ljust(44)]
    cells += [fmt(sp[k]["spearman"] if k in sp else None).rjust(6) for k in simulate.UTILITY_COLUMNS]
    if ev["available"]:
        share = ev["helpful_evicted_share"]
        cells += [str(ev["listed"]).rjust(4), fmt(ev["precision"]).rjust(5), fmt(ev["recall"]).rjust(5),
                  f"{ev['helpful_evicted']:>3} ({fmt(share * 100 if share is not None else None, 1):>4}%)"]
    else:
        cells += ["n/a".rjust(4), "n/a".rjust(5), "n/a".rjust(5), "n/a".rjust(11)]
    for view in ("misleading_tips", "harmful_when_followed"):
        d = m["detectors"][view]
        cells.append(f"{fmt(d['precision']):>6}/{fmt(d['recall']):>4} ({d['listed']:>3})" if d["available"]
                     else "n/a".rjust(17))
    return "  ".join(cells)


def goals(m: dict) -> list[dict]:
    """The default world's goals for eviction and ranking, each with its measurement and whether it holds."""
    ev = m["eviction"]
    sp = m["spearman"]
    gain = None
    if sp.get("not_misleading", {}).get("spearman") is not None and sp["outcome_hit_rate"]["spearman"] is not None:
        gain = sp["not_misleading"]["spearman"] - sp["outcome_hit_rate"]["spearman"]
    rows = [
        ("eviction precision", ">=", 0.80, ev.get("precision"), "{:.2f}"),
        ("eviction recall", ">=", 0.60, ev.get("recall"), "{:.2f}"),
        ("helpful tips evicted (share)", "<=", 0.03, ev.get("helpful_evicted_share"), "{:.1%}"),
        ("Spearman of not_misleading above outcome-only credit", ">=", 0.20, gain, "{:+.2f}"),
    ]
    out = []
    for name, op, target, value, form in rows:
        met = value is not None and (value >= target if op == ">=" else value <= target)
        out.append({"goal": f"{name} {op} {form.format(target)}", "value": value,
                    "shown": "n/a" if value is None else form.format(value), "met": met})
    return out


HEADER = "  ".join([
    "world".ljust(44), "sp_out", "sp_hit", "sp_eff", "sp_blm", "evic", " ev_P", " ev_R", "helpful_ev ",
    "misleading P/R(n)", "harmful_wf P/R(n)",
])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--deploy-to", help="sqitch change or tag to deploy up to (default: all)")
    parser.add_argument("--baseline", metavar="CHANGE",
                        help="also run the default world deployed only up to CHANGE (e.g. @v0.4.0)")
    parser.add_argument("--json", type=Path, help="write every world's metrics here")
    args = parser.parse_args()

    base = json.loads(simulate.DEFAULT_WORLD_PATH.read_text(encoding="utf-8"))
    started = time.monotonic()
    template = simulate.create_template(deploy_to=args.deploy_to)
    results = []
    try:
        for label, change in GRID:
            world = simulate.validate_world({**base, **change, "name": label})
            t0 = time.monotonic()
            metrics = simulate.simulate(world, args.seed, template=template, deploy_to=args.deploy_to).metrics
            results.append((label, metrics))
            print(f"simulate grid: {label}: {time.monotonic() - t0:.0f}s", file=sys.stderr, flush=True)
        for label, filename, seed in NUISANCE:
            world = simulate.load_world(WORLDS_DIR / filename)
            t0 = time.monotonic()
            metrics = simulate.simulate(world, seed, template=template, deploy_to=args.deploy_to).metrics
            results.append((label, metrics))
            print(f"simulate grid: {label}: {time.monotonic() - t0:.0f}s", file=sys.stderr, flush=True)
    finally:
        simulate.drop_database(template)
    if args.baseline:
        world = simulate.validate_world({**base, "name": f"default at {args.baseline}"})
        t0 = time.monotonic()
        metrics = simulate.simulate(world, args.seed, deploy_to=args.baseline).metrics
        results.append((f"default, deployed to {args.baseline}", metrics))
        print(f"simulate grid: default at {args.baseline}: {time.monotonic() - t0:.0f}s", file=sys.stderr, flush=True)
    deployed = results[0][1]["deployed"] if results else {"to": args.deploy_to or "HEAD", "last_change": None}
    print(f"== simulated worlds (seed {args.seed}, deployed to {deployed['to']}, last change "
          f"{deployed['last_change']}; {time.monotonic() - started:.0f}s)")
    print("sp_*: Spearman with true value of outcome_hit_rate, hit_rate, effect, 1 - misleading_probability; evic: tips evict_tips proposes "
          "(dry run); ev_P/ev_R: its precision/recall for truly misleading tips; helpful_ev: helpful tips "
          "proposed; detector views: precision/recall (tips listed)")
    print(HEADER)
    for label, metrics in results:
        print(line(label, metrics))
    if results:
        print(f"goals on the default world (seed {args.seed}):")
        for g in goals(results[0][1]):
            print(f"  {g['goal']:<62} {g['shown']:>6}  {'met' if g['met'] else 'MISSED'}")
    if args.json:
        payload = {label: m for label, m in results}
        if results:
            payload["goals"] = goals(results[0][1])
        args.json.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
