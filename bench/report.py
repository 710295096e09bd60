"""Print the short summary table of one `make bench` run from bench/measure.py's JSON."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any


def ms(value: float) -> str:
    """A duration in milliseconds with sensible precision (seconds past 10 s)."""
    if value >= 10000:
        return f"{value / 1000:.1f} s"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def times(label: str, stats: list[dict[str, float]], p95: bool = True) -> str:
    """One timing line: for each phase the median and (optionally) the p95."""
    cells = []
    for s in stats:
        cell = ms(s["median_ms"]) + (f" / {ms(s['p95_ms'])}" if p95 else "")
        cells.append(f"{cell:>19}")
    return f"  {label:<50} {stats[0]['n']:>4} " + " ".join(cells)


def report(r: dict[str, Any], load_mode: str, elapsed: int) -> str:
    """The summary as text."""
    f = r["facts"]
    leaf, par = r["phases"]["leaf"], r["phases"]["parents"]
    both = (leaf, par)
    lines = []
    lines.append(f"== make bench summary: one run on {r['cpus']} CPUs, PostgreSQL {f['server_version'].split()[0]}, "
                 f"shared_buffers {f['shared_buffers']}, {elapsed} s in all")
    scored_pct = 100.0 * f["log_rows_scored"] / f["log_rows"]
    lines.append(f"data: {f['log_rows']:,} log rows ({scored_pct:.1f}% with DEF-27 columns), {f['tips']:,} tips over "
                 f"{f['rules']} rules, {f['runs']} runs, {f['attempts']:,} attempts; log rows per tip: median "
                 f"{f['median_rows_per_tip']:.0f}, max {f['max_rows_per_tip']}")
    lines.append(f"      log heap {f['log_heap']} + indexes {f['log_indexes']}; tip_stats {f['tip_stats_size']}; "
                 f"tips {f['tips_size']}")
    chunks = [s for s in r["load"] if s["step"].startswith("log chunk")]
    others = [s for s in r["load"] if not s["step"].startswith("log chunk")]
    total = sum(s["seconds"] for s in chunks)
    how = ("statement triggers refreshing tip_stats" if load_mode == "triggers"
           else "replica mode: no triggers, no FK checks")
    per_chunk = " / ".join(format(s["seconds"], ".1f") for s in chunks)
    lines.append(f"load: {len(chunks)} INSERT ... SELECT of ~{chunks[0]['rows']:,} rows, {how}: {total:.1f} s "
                 f"({per_chunk} s)")
    lines.append("      " + "; ".join(s["step"] if s["seconds"] is None else f"{s['step']} {s['seconds']:.1f} s"
                                      for s in others))
    lines.append("")
    lines.append("  columns: [leaf] partitions analyzed, partitioned parents not (autovacuum's state);")
    lines.append(f"           [parents] after ANALYZE of the ctxgraph.* parents ({r['analyze_parents_ms'] / 1000:.1f} s)")
    lines.append(f"  {'reads: client round trip unless marked':<50} {'n':>4} {'[leaf] med / p95 ms':>19} "
                 f"{'[parents] med / p95':>19}")
    lines.append(times("(a) ranker read, 50 tips, prepared", [p["a_ranker_read"] for p in both]))
    lines.append(times("(a) same, unprepared (planned every call)", [p["a_ranker_read_unprepared"] for p in both]))
    lines.append(times("(a) same, server execution time", [p["a_ranker_read_server"] for p in both]))
    lines.append(times(f"(b) from scratch, same 50 tips (~{leaf['b_log_rows_per_read']:,} rows)",
                       [p["b_from_scratch_50"] for p in both]))
    lines.append(times("(b) same, server execution time", [p["b_from_scratch_50_server"] for p in both]))
    lines.append(times(f"(c) from scratch, whole log ({leaf['c_rows']:,} tips)", [p["c_from_scratch_all"] for p in both]))
    lines.append(f"  {'ratio (b)/(a), medians (server times)':<55} "
                 + " ".join(f"{format(p['ratio_b_over_a'], ',.0f') + 'x (' + format(p['ratio_b_over_a_server'], ',.0f') + 'x)':>19}"
                            for p in both))
    lines.append(f"  {'ratio (c)/(a), medians':<55} " + " ".join(f"{format(p['ratio_c_over_a'], ',.0f') + 'x':>19}"
                                                            for p in both))
    lines.append(f"  {'ranker read buffers (shared hit), one 50-tip read':<55} "
                 + " ".join(f"{p['plan_buffers']:>19}" for p in both))
    lines.append(f"  {'queries JIT-compiled: (a) / (b), of n':<55} "
                 + " ".join(f"{str(p['a_jit_compiled']) + ' / ' + str(p['b_jit_compiled']):>19}" for p in both))
    yes = {True: "yes", False: "NO"}
    lines.append(f"  {'view == from-scratch aggregate (50-tip sets / all)':<55} "
                 + " ".join(f"{yes[p['b_equals_view']] + ' / ' + yes[p['c_equals_view']]:>19}" for p in both))
    lines.append("")
    n_writes = leaf["d_write_with_triggers"]["total"]["n"]
    lines.append(f"  {'writes, median ms: triggers / none = ratio':<50} {'n':>4} {'[leaf]':>27} {'[parents]':>27}")
    for key, label in (("log_retrievals", "log_retrievals (5 tips)"), ("save_attempt", "save_attempt"),
                       ("update_retrieval_attempt_ids", "update_retrieval_attempt_ids"),
                       ("record_outcome", "record_outcome"), ("total", "one attempt, all four calls")):
        cells = []
        for p in both:
            a, b = p["d_write_with_triggers"][key]["median_ms"], p["d_write_without_triggers"][key]["median_ms"]
            cells.append(f"{ms(a) + ' / ' + ms(b) + ' = ' + format(a / b, ',.1f') + 'x':>27}")
        lines.append(f"  {label:<50} {n_writes:>4} " + " ".join(cells))
    cells = []
    for p in both:
        a, b = p["d_scorer_with_triggers"]["median_ms"], p["d_scorer_without_triggers"]["median_ms"]
        cells.append(f"{ms(a) + ' / ' + ms(b) + ' = ' + format(a / b, ',.1f') + 'x':>27}")
    label = f"scorer UPDATE of {leaf['d_scorer_rows']:,} rows (~{int(leaf['d_scorer_tips_touched']):,} tips)"
    lines.append(f"  {label:<50} {leaf['d_scorer_with_triggers']['n']:>4} " + " ".join(cells))
    if all("d_scorer_level_floor" in p for p in both):
        cells = []
        for p in both:
            a, b = p["d_scorer_level_floor"]["median_ms"], p["d_scorer_without_triggers"]["median_ms"]
            cells.append(f"{ms(a) + ' / ' + ms(b) + ' = ' + format(a / b, ',.1f') + 'x':>27}")
        pairs, rules, tips = (int(v) for v in leaf["d_scorer_level_floor_rows"])
        label = f"  its floor (+ {pairs:,}/{rules:,}/{tips:,} keyed UPDATEs)"
        lines.append(f"  {label:<50} {leaf['d_scorer_level_floor']['n']:>4} " + " ".join(cells))
    rebuild_label = ("full rebuild (refresh_tip_stats), at the load" if leaf.get("e_full_refresh_at_load")
                     else "full rebuild, refresh_tip_stats(stig), once")
    lines.append(f"  {rebuild_label:<50} {1:>4} "
                 + " ".join(f"{ms(p['e_full_refresh_ms']) if 'e_full_refresh_ms' in p else 'not measured':>27}"
                            for p in both))
    lines.append(f"  (log rows per written tip: ~{leaf['d_log_rows_per_written_tip']:.0f}; "
                 "a phase's write series runs on its own run ids, the scorer batches are rolled back)")
    slow = leaf["d_write_with_triggers"]["total"]["median_ms"] / par["d_write_with_triggers"]["total"]["median_ms"]
    if slow > 3:
        lines.append("")
        lines.append(f"  NOTE: the write path is {slow:.0f}x slower while the partitioned parents have no statistics:"
                     " refresh_tip_stats")
        lines.append("  misplans (full scans of the log, JIT). Plans and details: docs/ranker-plan.md, 'Findings'.")
    lines += eviction_report(r)
    lookups = r.get("id_lookups")
    if lookups:
        lines.append("")
        lines.append(f"  {'lookup of ' + format(lookups['ids'], ',') + ' log rows by id, median ms':<55} {'measured':>19}")
        lines.append(f"  {'  stig.tip_retrievals WHERE id = ANY (...)':<55} {ms(lookups['per_skill_table']['median_ms']):>19}")
        lines.append(f"  {'  ctxgraph.tip_retrievals WHERE skill AND id = ANY (...)':<55} "
                     f"{ms(lookups['parent_with_skill']['median_ms']):>19}"
                     f"   (per-skill / parent {lookups['ratio_per_skill_over_parent']:.2f}x)")
    return "\n".join(lines)


def eviction_report(r: dict[str, Any]) -> list[str]:
    """Eviction and the effects at this size, and the issue's goals beside what was measured."""
    e = r.get("eviction")
    if not e:
        return []
    par = r["phases"]["parents"]
    lines = ["", f"  {'eviction, median ms (n = ' + str(e['dry_run']['n']) + ')':<55} {'measured':>19}"]
    methods = ", ".join(f"{k} {v:,}" for k, v in sorted(e["effects_methods"].items()))
    lines.append(f"  {'attribution fit, ctxgraph.fit (read, fit, write)':<55} {ms(e['effects_fit_ms']):>19}   ({methods})")
    if e.get("blame"):
        method, sweeps, converged, fitted_tips, *rest = e["blame"]
        moving = rest[0] if rest else None  # runs before the mean-field fit recorded it have four fields
        settled = "settled" if converged else (
            "not settled" + (f", {moving:,} tips still moving by > 0.001" if moving is not None else ""))
        lines.append(f"  {'  of which the blame fit: method, sweeps':<55} {str(method) + ', ' + str(sweeps):>19}"
                     f"   ({settled}; {fitted_tips:,} tips with a misleading probability)")
    lines.append(f"  {'ensure_fit again, nothing changed (fit_state only)':<55} {ms(e['effects_reuse']['median_ms']):>19}")
    reasons = ", ".join(f"{k} {v:,}" for k, v in (e.get("dry_run_reasons") or {}).items())
    lines.append(f"  {'evict_tips dry run (' + str(e['dry_run_candidates']) + ' candidates)':<55} "
                 f"{ms(e['dry_run']['median_ms']):>19}" + (f"   ({reasons})" if reasons else ""))
    lines.append(f"  {'eviction_candidates view':<55} {ms(e['candidates_view']['median_ms']):>19}")
    lines.append(f"  {'tip_evidence at now(): the maintained levels':<55} {ms(e['tip_evidence_now']['median_ms']):>19}")
    lines.append(f"  {'tip_evidence inside the log: the log path (baseline)':<55} {ms(e['tip_evidence_log_ms']):>19}"
                 f"   = {e['tip_evidence_log_ms'] / e['tip_evidence_now']['median_ms']:,.0f}x the maintained read")
    if "audit_ms" in e:
        lines.append(f"  {'ctxgraph audit --skill stig (whole report)':<55} {ms(e['audit_ms']):>19}"
                     f"   (exit {e['audit_status']})")
    # Both statistics states: a goal is met only when it holds in each.
    phases = [r["phases"][name] for name in ("leaf", "parents")]
    writes = " / ".join(format(p["d_write_with_triggers"]["total"]["median_ms"]
                               / p["d_write_without_triggers"]["total"]["median_ms"], ".1f") + "x" for p in phases)
    scorer = " / ".join(format(p["d_scorer_with_triggers"]["median_ms"]
                               / p["d_scorer_without_triggers"]["median_ms"], ".1f") + "x" for p in phases)
    rows = r["facts"]["log_rows"]
    lines += ["", f"  {'goals (issue 11) at ' + format(rows, ',') + ' log rows':<63} {'goal':>10} {'measured':>12}"]
    label = "one attempt's write path, triggers / none ([leaf] / [parents])"
    lines.append(f"  {label:<63} {'<= 2x':>10} {writes:>12}")
    lines.append(f"  {'scorer write-back of 3,500 rows, the same':<63} {'<= 2x':>10} {scorer:>12}")
    if all("d_scorer_level_floor" in p for p in phases):
        floor = " / ".join(format(p["d_scorer_level_floor"]["median_ms"]
                                  / p["d_scorer_without_triggers"]["median_ms"], ".1f") + "x" for p in phases)
        lines.append(f"  {'  its floor: the UPDATE + a keyed UPDATE per touched level row':<63} {'':>10} {floor:>12}")
    lines.append(f"  {'evict_tips dry run (goal stated for 10M rows)':<63} {'<= 5 s':>10} "
                 f"{ms(e['dry_run']['median_ms']):>12}")
    if "audit_ms" in e:
        lines.append(f"  {'ctxgraph audit (goal stated for 1M rows)':<63} {'<= 5 s':>10} {ms(e['audit_ms']):>12}")
    return lines


def ingest_report(g: dict[str, Any]) -> str:
    """The ingest section: goals beside measurements (bench/measure.py's measure_ingest)."""
    rate = lambda v: f"{v:,.0f}/s"  # noqa: E731
    lines = [f"== ingest of one run log on a {g['history_rows']:,}-row history: {g['retrievals']:,} retrievals over "
             f"{g['attempts']:,} attempts ({g['log_bytes'] / 1e6:.1f} MB of JSONL); medians of {g['bulk_load']['n']}"]
    lines.append(f"  {'':<58} {'ms':>10} {'retrievals/s':>14}  goal")
    lines.append(f"  {'plain COPY of the same rows, unindexed table':<58} {ms(g['copy_plain']['median_ms']):>10} "
                 f"{rate(g['copy_plain_rate']):>14}")
    lines.append(f"  {'plain COPY, table with the log' + chr(39) + 's ' + str(g['copy_indexed_count']) + ' indexes':<58} "
                 f"{ms(g['copy_indexed']['median_ms']):>10} {rate(g['copy_indexed_rate']):>14}")
    share = g["bulk_share_of_copy"]
    lines.append(f"  {'ctxgraph load (bulk: COPY + ingest_run_log, all checks)':<58} {ms(g['bulk_load']['median_ms']):>10} "
                 f"{rate(g['bulk_rate']):>14}  >= 10% of unindexed COPY: {100 * share:.1f}% "
                 f"({'met' if share >= 0.10 else 'NOT met'})")
    lines.append(f"  {'  of which reading and checking the JSONL in Python':<58} {ms(g['bulk_parse']['median_ms']):>10}")
    if "bulk_no_levels" in g:
        lines.append(f"  {'the same load, key checks but no tip_stats trigger':<58} "
                     f"{ms(g['bulk_no_levels']['median_ms']):>10} {rate(g['bulk_no_levels_rate']):>14}  "
                     f"{100 * g['bulk_no_levels_share_of_copy']:.1f}% of unindexed COPY: the load without the "
                     f"maintained levels")
    if "bulk_floor" in g:
        lines.append(f"  {'the same load, no trigger and no key check (the floor)':<58} "
                     f"{ms(g['bulk_floor']['median_ms']):>10} {rate(g['bulk_floor_rate']):>14}  "
                     f"{100 * g['bulk_floor_share_of_copy']:.1f}% of unindexed COPY: the most a load keeping "
                     f"the log's indexes and the loader's checks reaches")
    label = f"ctxgraph load --per-call ({g['per_call_attempts']:,} attempts, 4 calls each)"
    lines.append(f"  {label:<58} {ms(g['per_call_load_ms']):>10} {rate(g['per_call_rate']):>14}  "
                 f"bulk is {g['bulk_rate'] / g['per_call_rate']:,.0f}x faster")
    lines.append("")
    n = g["attempt_history"]["n"]
    lines.append(f"  per-attempt write path (4 calls, one transaction of {n} attempts), median ms: "
                 f"all / first {g['series_tenth']} / last {g['series_tenth']}")
    cells = {}
    for name, label in (("history", f"on the {g['history_rows']:,}-row log (stig)"), ("empty", "on an empty log (a fresh skill)")):
        a, f, last = (g[f"attempt_{name}{k}"]["median_ms"] for k in ("", "_first", "_last"))
        cells[name] = a
        lines.append(f"  {label:<58} {ms(a):>10} / {ms(f)} / {ms(last)}")
    ratio = cells["history"] / cells["empty"]
    lines.append(f"  {'ratio history / empty':<58} {ratio:>9.2f}x  goal about 1x "
                 f"({'met' if ratio <= 1.5 else 'NOT met'}, within 1.5x)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Read the JSON and print the summary."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results")
    parser.add_argument("--load-mode", default="triggers")
    parser.add_argument("--elapsed", type=int, default=0)
    args = parser.parse_args(argv)
    with open(args.results, encoding="utf-8") as fh:
        results = json.load(fh)
    if "phases" in results and results["phases"]:
        print(report(results, args.load_mode, args.elapsed))
    if "ingest" in results:
        print()
        print(ingest_report(results["ingest"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
