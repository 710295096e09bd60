#!/usr/bin/env python3
"""Measure how well each embedding cosine mode separates followed from ignored tips.

Reads the hand-labelled (tip, script, followed) pairs in tests/data/follow_pairs.jsonl, computes the
tip/script cosine for every mode in ctxgraph.embed.MODES (truncated, chunk_max, chunk_mean) and prints,
per mode: ROC AUC (Mann-Whitney, ties count one half) for all pairs, hard pairs, easy (not hard)
pairs, long scripts (more than one model window) and short scripts, stratified bootstrap 95%
intervals (all, hard, long) and paired differences between modes, mean cosine of followed vs
ignored pairs, the in-sample best-accuracy threshold, accuracy at the fixed 0.6 threshold the
follow_weight contract uses, and the same-tip win rate (for tips paired with one followed and one
ignored script: how often the followed script scores higher).

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/measure_embedding_auc.py            # tables
    HF_HUB_OFFLINE=1 .venv/bin/python scripts/measure_embedding_auc.py --json     # machine-readable
    HF_HUB_OFFLINE=1 .venv/bin/python scripts/measure_embedding_auc.py --per-pair # every cosine
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "scorer") not in sys.path:
    sys.path.insert(0, str(ROOT / "scorer"))

from ctxgraph.embed import DEFAULT_MODE, MODES, Embedder, follow_cosine  # noqa: E402

DEFAULT_PAIRS = ROOT / "tests" / "data" / "follow_pairs.jsonl"
CONTRACT_THRESHOLD = 0.6  # ctxgraph.follow_weight: judge NULL and embedding >= 0.6 -> followed
REQUIRED = ("id", "tip", "script", "followed", "hard")


def load_pairs(path: Path) -> list[dict[str, Any]]:
    """Return the labelled pairs in file order; raise ValueError on a malformed or duplicate row."""
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            missing = [key for key in REQUIRED if key not in row]
            if missing:
                raise ValueError(f"{path}:{lineno}: missing {', '.join(missing)}")
            if not isinstance(row["followed"], bool) or not isinstance(row["hard"], bool):
                raise ValueError(f"{path}:{lineno}: followed and hard must be booleans")
            if row["id"] in seen:
                raise ValueError(f"{path}:{lineno}: duplicate id {row['id']!r}")
            seen.add(row["id"])
            rows.append(row)
    return rows


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Return 1-based ranks of values, tied values sharing the mean of their ranks."""
    uniq, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    first = np.cumsum(counts) - counts  # 0-based position of each distinct value's first occurrence
    return (first + (counts + 1) / 2.0)[inverse]


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float | None:
    """Return ROC AUC via the Mann-Whitney U statistic (ties count 1/2), or None if a class is empty."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=bool)
    n_pos = int(labels.sum())
    n_neg = int(labels.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = average_ranks(scores)
    u = ranks[labels].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def best_threshold(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """Return (threshold, accuracy) maximising accuracy of `score >= threshold` (lowest such threshold)."""
    uniq = np.unique(scores)
    candidates = np.concatenate(([uniq[0] - 1e-6], (uniq[:-1] + uniq[1:]) / 2.0, [uniq[-1] + 1e-6]))
    best_t, best_acc = float(candidates[0]), -1.0
    for t in candidates:
        acc = float(np.mean((scores >= t) == labels))
        if acc > best_acc + 1e-12:
            best_t, best_acc = float(t), acc
    return best_t, best_acc


def stratified_bootstrap(
    table: dict[str, np.ndarray], labels: np.ndarray, mask: np.ndarray, n_boot: int, seed: int
) -> tuple[dict[str, tuple[float, float]], dict[str, tuple[float, float, float]]]:
    """Return 95% intervals of AUC per mode and of paired AUC differences (with P(diff <= 0)).

    Followed and ignored pairs inside ``mask`` are resampled separately (both classes always present);
    every mode is scored on the same resample, so the differences are paired.
    """
    rng = np.random.default_rng(seed)
    pos = np.flatnonzero(labels & mask)
    neg = np.flatnonzero(~labels & mask)
    draws: dict[str, list[float]] = defaultdict(list)
    for _ in range(n_boot):
        idx = np.concatenate((rng.choice(pos, pos.size), rng.choice(neg, neg.size)))
        for mode, scores in table.items():
            draws[mode].append(roc_auc(scores[idx], labels[idx]) or 0.0)
    intervals = {m: (float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))) for m, v in draws.items()}
    diffs: dict[str, tuple[float, float, float]] = {}
    for a, b in combinations(table, 2):
        d = np.asarray(draws[a]) - np.asarray(draws[b])
        diffs[f"{a} - {b}"] = (
            float(np.percentile(d, 2.5)),
            float(np.percentile(d, 97.5)),
            float(np.mean(d <= 0)),
        )
    return intervals, diffs


def same_tip_win_rate(rows: list[dict[str, Any]], scores: np.ndarray) -> tuple[float | None, int]:
    """Among tips labelled with both a followed and an ignored script, how often followed scores higher."""
    groups: dict[str, dict[bool, list[int]]] = defaultdict(lambda: {True: [], False: []})
    for i, row in enumerate(rows):
        groups[row["tip"]][row["followed"]].append(i)
    wins = 0.0
    n = 0
    for group in groups.values():
        for i in group[True]:
            for j in group[False]:
                if np.isnan(scores[i]) or np.isnan(scores[j]):
                    continue
                n += 1
                wins += 1.0 if scores[i] > scores[j] else 0.5 if scores[i] == scores[j] else 0.0
    return (wins / n if n else None), n


def measure(rows: list[dict[str, Any]], embedder: Embedder, n_boot: int, seed: int) -> dict[str, Any]:
    """Return every figure for every mode as a JSON-ready dict."""
    t0 = time.perf_counter()
    tip_vecs = embedder.encode([r["tip"] for r in rows])
    t1 = time.perf_counter()
    chunk_vecs = embedder.script_chunk_vectors([r["script"] for r in rows])
    t2 = time.perf_counter()

    labels = np.array([r["followed"] for r in rows], dtype=bool)
    hard = np.array([r["hard"] for r in rows], dtype=bool)
    n_chunks = np.array([c.shape[0] for c in chunk_vecs])
    long_ = n_chunks > 1
    subsets = {
        "all": np.ones_like(labels),
        "hard": hard,
        "easy": ~hard,
        "long": long_,
        "short": ~long_,
        "hard_long": hard & long_,
        "hard_short": hard & ~long_,
    }

    raw: dict[str, list[float | None]] = {
        mode: [follow_cosine(t, c, mode) for t, c in zip(tip_vecs, chunk_vecs)] for mode in MODES
    }
    for mode, values in raw.items():
        bad = [rows[i]["id"] for i, v in enumerate(values) if v is None]
        if bad:
            raise SystemExit(f"{mode}: non-finite cosine for {', '.join(bad)}")
    table = {mode: np.array(values, dtype=np.float64) for mode, values in raw.items()}
    boot = {
        name: stratified_bootstrap(table, labels, subsets[name], n_boot, seed)
        for name in ("all", "hard", "long")
    }
    diffs = boot["all"][1]

    modes: dict[str, Any] = {}
    for mode, scores in table.items():
        threshold, accuracy = best_threshold(scores, labels)
        win, n_win = same_tip_win_rate(rows, scores)
        win_long, n_win_long = same_tip_win_rate(rows, np.where(long_, scores, np.nan))
        modes[mode] = {
            "auc": {name: roc_auc(scores[mask], labels[mask]) for name, mask in subsets.items()},
            "auc_ci95": {name: list(b[0][mode]) for name, b in boot.items()},
            "mean_cos_followed": float(scores[labels].mean()),
            "mean_cos_ignored": float(scores[~labels].mean()),
            "mean_cos_followed_hard": float(scores[labels & hard].mean()),
            "mean_cos_ignored_hard": float(scores[~labels & hard].mean()),
            "best_threshold": threshold,
            "best_accuracy": accuracy,
            f"accuracy_at_{CONTRACT_THRESHOLD}": float(np.mean((scores >= CONTRACT_THRESHOLD) == labels)),
            "same_tip_win_rate": win,
            "same_tip_comparisons": n_win,
            "same_tip_win_rate_long": win_long,
            "same_tip_comparisons_long": n_win_long,
        }
    best = max(MODES, key=lambda m: modes[m]["auc"]["all"] or 0.0)
    return {
        "pairs_file": str(DEFAULT_PAIRS),
        "model": embedder.model_name,
        "max_tokens": embedder.max_tokens,
        "window_pieces": embedder.window,
        "counts": {
            "pairs": int(labels.size),
            "followed": int(labels.sum()),
            "ignored": int((~labels).sum()),
            "hard": int(hard.sum()),
            "long": int(long_.sum()),
            "short": int((~long_).sum()),
            "chunks": int(n_chunks.sum()),
            "max_chunks": int(n_chunks.max()),
        },
        "subset_counts": {
            name: {"followed": int((labels & mask).sum()), "ignored": int((~labels & mask).sum())}
            for name, mask in subsets.items()
        },
        "seconds": {"encode_tips": round(t1 - t0, 3), "chunk_and_encode_scripts": round(t2 - t1, 3)},
        "bootstrap": {"resamples": n_boot, "seed": seed, "auc_difference_ci95_and_p_le_0": diffs},
        "modes": modes,
        "best_auc_mode": best,
        "default_mode": DEFAULT_MODE,
        "pairs": [
            {
                "id": r["id"],
                "followed": r["followed"],
                "hard": r["hard"],
                "chunks": int(n_chunks[i]),
                **{mode: round(float(table[mode][i]), 4) for mode in MODES},
            }
            for i, r in enumerate(rows)
        ],
    }


def _f(value: float | None, width: int = 5) -> str:
    return "  n/a".rjust(width) if value is None else f"{value:.3f}".rjust(width)


def print_report(result: dict[str, Any], per_pair: bool) -> None:
    """Print the figures as plain-text tables."""
    c = result["counts"]
    sc = result["subset_counts"]
    print(
        f"model {result['model']}  window {result['window_pieces']} pieces "
        f"(+specials = {result['max_tokens']})"
    )
    print(
        f"pairs {c['pairs']} (followed {c['followed']}, ignored {c['ignored']}); hard {c['hard']}; "
        f"long {c['long']} / short {c['short']}; {c['chunks']} chunks, at most {c['max_chunks']} per script"
    )
    sizes = ", ".join(f"{k} {v['followed']}/{v['ignored']}" for k, v in sc.items())
    print(f"subset sizes (followed/ignored): {sizes}")
    print(
        f"time: tips {result['seconds']['encode_tips']} s, "
        f"scripts {result['seconds']['chunk_and_encode_scripts']} s"
    )
    print()
    header = (
        f"{'mode':<11} {'AUC all':>7} {'95% CI':>13} {'hard':>6} {'easy':>6} {'long':>6} {'short':>6} "
        f"{'cos F':>6} {'cos I':>6} {'best t':>6} {'acc':>5} {'acc@.6':>6} {'tip-win':>7}"
    )
    print(header)
    print("-" * len(header))
    for mode, m in result["modes"].items():
        lo, hi = m["auc_ci95"]["all"]
        print(
            f"{mode:<11} {_f(m['auc']['all'], 7)} {f'[{lo:.2f}, {hi:.2f}]':>13} {_f(m['auc']['hard'], 6)} "
            f"{_f(m['auc']['easy'], 6)} {_f(m['auc']['long'], 6)} {_f(m['auc']['short'], 6)} "
            f"{_f(m['mean_cos_followed'], 6)} "
            f"{_f(m['mean_cos_ignored'], 6)} {_f(m['best_threshold'], 6)} {_f(m['best_accuracy'])} "
            f"{_f(m[f'accuracy_at_{CONTRACT_THRESHOLD}'], 6)} {_f(m['same_tip_win_rate'], 7)}"
        )
    print()
    hl_n, hs_n = sc["hard_long"], sc["hard_short"]
    print(
        "bootstrap 95% CI of AUC (hard, long); AUC on hard & long "
        f"({hl_n['followed']}/{hl_n['ignored']}) and hard & short ({hs_n['followed']}/{hs_n['ignored']}); "
        "hard pairs' mean cosine followed / ignored; same-tip win rate where both scripts are long"
    )
    for mode, m in result["modes"].items():
        (hl, hh), (ll, lh) = m["auc_ci95"]["hard"], m["auc_ci95"]["long"]
        print(
            f"  {mode:<11} hard [{hl:.2f}, {hh:.2f}]  long [{ll:.2f}, {lh:.2f}]  "
            f"hard&long {_f(m['auc']['hard_long'])}  hard&short {_f(m['auc']['hard_short'])}  "
            f"hard cos {m['mean_cos_followed_hard']:.3f} / {m['mean_cos_ignored_hard']:.3f}  "
            f"long tip-win {_f(m['same_tip_win_rate_long'])} (n={m['same_tip_comparisons_long']})"
        )
    print()
    resamples = result["bootstrap"]["resamples"]
    print(f"paired bootstrap ({resamples} resamples), AUC difference 95% CI, P(diff <= 0):")
    for name, (lo, hi, p) in result["bootstrap"]["auc_difference_ci95_and_p_le_0"].items():
        print(f"  {name:<24} [{lo:+.3f}, {hi:+.3f}]  p={p:.3f}")
    print()
    print(
        f"best overall AUC: {result['best_auc_mode']}; "
        f"ctxgraph.embed.DEFAULT_MODE = {result['default_mode']}"
    )
    if per_pair:
        print()
        print(f"{'id':<36} {'F':>1} {'H':>1} {'ch':>2} " + " ".join(f"{m:>10}" for m in MODES))
        for p in result["pairs"]:
            print(
                f"{p['id']:<36} {int(p['followed'])} {int(p['hard'])} {p['chunks']:>2} "
                + " ".join(f"{p[m]:>10.3f}" for m in MODES)
            )


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, measure, print tables or JSON; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, default=DEFAULT_PAIRS, help="labelled JSONL (%(default)s)")
    parser.add_argument("--model", default=None, help="model folder (CTXGRAPH_EMBED_MODEL or the package)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    parser.add_argument("--per-pair", action="store_true", help="also list every pair's cosines")
    parser.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples (%(default)s)")
    parser.add_argument("--seed", type=int, default=20261129, help="bootstrap seed (default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=32, help="encoding batch size (%(default)s)")
    args = parser.parse_args(argv)

    rows = load_pairs(args.pairs)
    embedder = Embedder(args.model, batch_size=args.batch_size)
    result = measure(rows, embedder, args.bootstrap, args.seed)
    result["pairs_file"] = str(args.pairs)
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print_report(result, args.per_pair)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
