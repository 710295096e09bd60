"""Measure the ranker's read against from-scratch aggregation, and the write path's trigger cost.

Run by scripts/bench.sh on a throwaway database that bench/generate.sql has filled; the libpq
variables (PGHOST, PGPORT, PGUSER, PGDATABASE) name it. Every figure is a median (or p95) of
repeated timings on this one machine and run, reported as such and as ratios: nothing here passes
or fails on a time. Timings are client-side (time.perf_counter around execute + fetch over the
Unix socket, so they include the round trip), with server-side execution times from
EXPLAIN (ANALYZE, TIMING OFF) beside them where that helps.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scorer"))
from ctxgraph import loader  # noqa: E402  (ctxgraph load, bulk and per call)
from ctxgraph.fit import ensure_fit  # noqa: E402  (the attribution fit)
from ctxgraph.client import Client  # noqa: E402  (the write path as the agent calls it)

SKILL = "stig"

# (a) The ranker's read, exactly as the ranker issues it.
RANKER_READ = "SELECT * FROM stig.tip_hit_rates WHERE tip_id = ANY (%s::bigint[])"

# (b) and (c): the same columns computed from scratch: the counts from the raw log, every outcome
# and follow figure from ctxgraph.scored_retrievals (the one per-retrieval definition), and the
# expressions of ctxgraph.tip_hit_rates (deploy/view_tip_hit_rates.sql) on top. {log_filter} and
# {tip_filter} restrict it to the candidate ids for (b) and are empty for (c).
FROM_SCRATCH = """
WITH logged AS (
    SELECT r.tip_id, count(*) AS retrievals, max(r.retrieved_at) AS last_retrieved_at
      FROM ctxgraph.tip_retrievals AS r
     WHERE r.skill = 'stig' {log_filter}
     GROUP BY r.tip_id
),
scored AS (
    SELECT r.tip_id,
           count(*) AS scored,
           count(DISTINCT r.attempt_key) AS attempts,
           sum(r.credit) AS outcome_sum,
           sum(r.credit * r.follow_weight) AS weighted_sum,
           count(r.followed) AS follow_known,
           count(*) FILTER (WHERE r.followed) AS followed,
           count(*) FILTER (WHERE r.followed AND r.harmful) AS harm
      FROM ctxgraph.scored_retrievals AS r
     WHERE r.skill = 'stig' {log_filter}
     GROUP BY r.tip_id
)
SELECT t.id AS tip_id,
       t.rule_id,
       coalesce(l.retrievals, 0) AS retrievals,
       coalesce(s.scored, 0) AS scored,
       coalesce(s.attempts, 0) AS attempts,
       s.outcome_sum / nullif(s.scored, 0) AS outcome_hit_rate,
       s.weighted_sum / nullif(s.scored, 0) AS hit_rate,
       s.followed::double precision / nullif(s.follow_known, 0) AS follow_rate,
       coalesce(s.harm, 0) AS harm,
       ctxgraph.wilson_lower(s.weighted_sum / nullif(s.scored, 0), s.attempts, ctxgraph.param('utility.bound_z'))
           AS utility_lower_bound,
       l.last_retrieved_at,
       t.retired_at IS NOT NULL AS retired,
       t.retired_at
  FROM ctxgraph.tips AS t
  LEFT JOIN logged AS l ON l.tip_id = t.id
  LEFT JOIN scored AS s ON s.tip_id = t.id
 WHERE t.skill = 'stig' {tip_filter}
"""
FROM_SCRATCH_IDS = FROM_SCRATCH.format(
    log_filter="AND r.tip_id = ANY (%(ids)s::bigint[])", tip_filter="AND t.id = ANY (%(ids)s::bigint[])"
)
FROM_SCRATCH_ALL = FROM_SCRATCH.format(log_filter="", tip_filter="")

# (d) The scoring pass's batched write, as scorer/ctxgraph/scoring_store.py's write_scores issues it.
SCORER_UPDATE = """
UPDATE ctxgraph.tip_retrievals AS r
   SET tip_followed_llm = v.llm,
       tip_followed_emb = v.emb,
       tip_followed_computed_at = CASE WHEN v.stamp THEN clock_timestamp() END
  FROM unnest(%s::bigint[], %s::boolean[], %s::double precision[], %s::boolean[]) AS v (id, llm, emb, stamp)
 WHERE r.skill = %s AND r.id = v.id AND r.tip_followed_computed_at IS NULL
"""

# The write-back's floor: the scorer's UPDATE (triggers off) and then one primary-key UPDATE of every
# pair, (tip, rule) and tip row its scored rows touch, each moved by a constant: what any exact
# maintenance of those three levels must write at least, with nothing computed. Rolled back.
SCORER_LEVEL_FLOOR = """
WITH touched AS MATERIALIZED (
    SELECT r.tip_id, coalesce(r.attempt_id, -r.id) AS attempt_key, r.rule_id
      FROM ctxgraph.tip_retrievals AS r
     WHERE r.skill = %(skill)s AND r.id = ANY (%(ids)s::bigint[]) AND r.outcome_value IS NOT NULL
),
pairs AS (
    UPDATE ctxgraph.tip_attempt_stats AS a SET weight_sum = a.weight_sum + 0.5
      FROM (SELECT DISTINCT t.tip_id, t.attempt_key FROM touched AS t) AS t
     WHERE a.skill = %(skill)s AND a.tip_id = t.tip_id AND a.attempt_key = t.attempt_key
    RETURNING 1
),
rules AS (
    UPDATE ctxgraph.tip_rule_stats AS s SET followed_n = s.followed_n + 0.5
      FROM (SELECT DISTINCT t.tip_id, t.rule_id FROM touched AS t) AS t
     WHERE s.skill = %(skill)s AND s.tip_id = t.tip_id AND s.rule_id = t.rule_id
    RETURNING 1
),
tips AS (
    UPDATE ctxgraph.tip_stats AS s SET followed = s.followed + 1
      FROM (SELECT DISTINCT t.tip_id FROM touched AS t) AS t
     WHERE s.skill = %(skill)s AND s.tip_id = t.tip_id
    RETURNING 1
)
SELECT (SELECT count(*) FROM pairs), (SELECT count(*) FROM rules), (SELECT count(*) FROM tips)
"""

# The tables whose user (statement) triggers maintain tip_stats: the parents fire for statements
# aimed at ctxgraph.*, the partitions for statements aimed at stig.*.
TRIGGER_TABLES = ("ctxgraph.tip_retrievals", "stig.tip_retrievals", "ctxgraph.attempts", "stig.attempts")


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def summary(values: Sequence[float]) -> dict[str, float]:
    """Median, p95, min and count of timings in milliseconds."""
    return {
        "n": len(values),
        "median_ms": statistics.median(values),
        "p95_ms": percentile(values, 95),
        "min_ms": min(values),
    }


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Run fn once and return (milliseconds, its result)."""
    start = time.perf_counter()
    result = fn()
    return (time.perf_counter() - start) * 1000.0, result


def server_ms(conn: psycopg.Connection, query: str, params: Sequence[Any] | Mapping[str, Any], jit: list[int] | None = None) -> float:
    """Execution Time of EXPLAIN (ANALYZE, TIMING OFF) for one query, in milliseconds.

    When jit is a list, appends the number of functions JIT compiled for the query (0 without JIT).
    """
    rows = conn.execute("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) " + query, params).fetchone()
    if jit is not None:
        jit.append(int(rows[0][0].get("JIT", {}).get("Functions", 0)))
    return float(rows[0][0]["Execution Time"])


def set_triggers(conn: psycopg.Connection, enabled: bool) -> None:
    """Enable or disable the tip_stats statement triggers (user triggers; FK checks stay on)."""
    verb = "ENABLE" if enabled else "DISABLE"
    for table in TRIGGER_TABLES:
        conn.execute(f"ALTER TABLE {table} {verb} TRIGGER USER")


def same_rows(left: list[tuple], right: list[tuple]) -> bool:
    """True when two result sets hold the same rows, floats equal to 1e-9 relative."""
    if len(left) != len(right):
        return False
    for a, b in zip(sorted(left, key=lambda r: r[0]), sorted(right, key=lambda r: r[0])):
        for x, y in zip(a, b):
            if isinstance(x, float) and isinstance(y, float):
                if not math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12):
                    return False
            elif x != y:
                return False
    return True


def measure_reads(conn: psycopg.Connection, id_sets: list[list[int]], args: argparse.Namespace) -> dict[str, Any]:
    """(a), (b), (c): the ranker's read against from-scratch aggregation of the log."""
    out: dict[str, Any] = {}

    # (a) prepared (as a ranker with a connection pool runs it): warm up, then time.
    for ids in id_sets[:10]:
        conn.execute(RANKER_READ, (ids,), prepare=True).fetchall()
    a_client = [timed(lambda ids=ids: conn.execute(RANKER_READ, (ids,), prepare=True).fetchall())[0] for ids in id_sets]
    # (a) unprepared: parsed and planned every time (the view spans two partitioned tables).
    a_unprepared = [
        timed(lambda ids=ids: conn.execute(RANKER_READ, (ids,), prepare=False).fetchall())[0] for ids in id_sets
    ]
    a_jit: list[int] = []
    a_server = [server_ms(conn, RANKER_READ, (ids,), a_jit) for ids in id_sets]
    out["a_jit_compiled"] = sum(1 for n in a_jit if n > 0)
    out["a_ranker_read"] = summary(a_client)
    out["a_ranker_read_unprepared"] = summary(a_unprepared)
    out["a_ranker_read_server"] = summary(a_server)
    rows_per_read = conn.execute(RANKER_READ, (id_sets[0],)).fetchall()
    out["a_rows_per_read"] = len(rows_per_read)

    # (b) from scratch for the same candidate sets.
    b_sets = id_sets[: args.scratch_reads]
    conn.execute(FROM_SCRATCH_IDS, {"ids": b_sets[0]}, prepare=True).fetchall()
    b_client = [
        timed(lambda ids=ids: conn.execute(FROM_SCRATCH_IDS, {"ids": ids}, prepare=True).fetchall())[0] for ids in b_sets
    ]
    b_jit: list[int] = []
    b_server = [server_ms(conn, FROM_SCRATCH_IDS, {"ids": ids}, b_jit) for ids in b_sets]
    out["b_jit_compiled"] = sum(1 for n in b_jit if n > 0)
    out["b_from_scratch_50"] = summary(b_client)
    out["b_from_scratch_50_server"] = summary(b_server)
    log_rows = conn.execute(
        "SELECT count(*) FROM stig.tip_retrievals WHERE tip_id = ANY (%s::bigint[])", (b_sets[0],)
    ).fetchone()[0]
    out["b_log_rows_per_read"] = log_rows
    # The maintained aggregates must equal the from-scratch ones (exact by construction).
    out["b_equals_view"] = all(
        same_rows(
            conn.execute(RANKER_READ, (ids,)).fetchall(),
            conn.execute(FROM_SCRATCH_IDS, {"ids": ids}).fetchall(),
        )
        for ids in b_sets[:5]
    )

    # (c) from scratch over the whole log, and the check that every row of the view matches.
    c_client = []
    full = None
    for _ in range(args.full_reads):
        ms, full = timed(lambda: conn.execute(FROM_SCRATCH_ALL).fetchall())
        c_client.append(ms)
    out["c_from_scratch_all"] = summary(c_client)
    out["c_equals_view"] = same_rows(conn.execute("SELECT * FROM stig.tip_hit_rates").fetchall(), full or [])
    out["c_rows"] = len(full or [])

    a_med = out["a_ranker_read"]["median_ms"]
    out["ratio_b_over_a"] = out["b_from_scratch_50"]["median_ms"] / a_med
    out["ratio_c_over_a"] = out["c_from_scratch_all"]["median_ms"] / a_med
    out["ratio_b_over_a_server"] = out["b_from_scratch_50_server"]["median_ms"] / out["a_ranker_read_server"]["median_ms"]
    return out


def write_path(conn: psycopg.Connection, run_id: str, plan: list[tuple[str, list[int], bool, str | None]]) -> dict[str, list[float]]:
    """One attempt after another as the agent writes them (autocommit: one transaction per call)."""
    times: dict[str, list[float]] = {"log_retrievals": [], "save_attempt": [], "update_retrieval_attempt_ids": [],
                                     "record_outcome": [], "total": []}
    # The client's statements repeat verbatim, so psycopg prepares them after its prepare_threshold (5).
    client = Client(conn)
    for rule_id, tips, passed, failure_mode in plan:
        sims = [round(0.9 - 0.05 * i, 3) for i in range(len(tips))]
        t_log, ids = timed(lambda: client.log_retrievals(SKILL, run_id, rule_id, tips, sims))
        t_save, attempt_id = timed(lambda: client.save_attempt(SKILL, run_id, rule_id, 1))
        t_link, _ = timed(lambda: client.update_retrieval_attempt_ids(SKILL, ids, attempt_id))
        t_rec, _ = timed(lambda: client.record_outcome(SKILL, attempt_id, passed, failure_mode))
        for key, value in (("log_retrievals", t_log), ("save_attempt", t_save),
                           ("update_retrieval_attempt_ids", t_link), ("record_outcome", t_rec),
                           ("total", t_log + t_save + t_link + t_rec)):
            times[key].append(value)
    return times


def write_plan(conn: psycopg.Connection, rng: random.Random, count: int) -> list[tuple[str, list[int], bool, str | None]]:
    """count attempts on distinct rules: 5 of the rule's tips each, a pass or a clean failure."""
    rules = conn.execute("SELECT DISTINCT rule_id FROM stig.tips ORDER BY rule_id").fetchall()
    plan = []
    for rule_id in rng.sample([r[0] for r in rules], count):
        tips = [r[0] for r in conn.execute("SELECT id FROM stig.tips WHERE rule_id = %s ORDER BY id", (rule_id,))]
        passed = rng.random() < 0.6
        plan.append((rule_id, rng.sample(tips, 5), passed, None if passed else "clean_failure"))
    return plan


def scorer_batches(conn: psycopg.Connection, rng: random.Random, args: argparse.Namespace) -> list[tuple]:
    """args.scorer_reps batches of args.scorer_rows unscored rows, each batch from one run, with values."""
    runs = [r[0] for r in conn.execute(
        "SELECT run_id FROM stig.tip_retrievals WHERE tip_followed_computed_at IS NULL AND run_id LIKE 'bench-run-%%'"
        " GROUP BY run_id HAVING count(*) >= %s ORDER BY run_id DESC LIMIT %s",
        (args.scorer_rows, args.scorer_reps)).fetchall()]
    batches = []
    for run_id in runs:
        ids = [r[0] for r in conn.execute(
            "SELECT id FROM stig.tip_retrievals WHERE run_id = %s AND tip_followed_computed_at IS NULL"
            " ORDER BY id LIMIT %s", (run_id, args.scorer_rows))]
        llm = [None if rng.random() < 0.2 else rng.random() < 0.45 for _ in ids]
        emb = [round(rng.uniform(0.05, 0.8), 4) for _ in ids]
        batches.append((ids, llm, emb, [True] * len(ids)))
    return batches


def measure_writes(conn: psycopg.Connection, phase: str, plan: list[tuple[str, list[int], bool, str | None]],
                   batches: list[tuple], rebuild: bool) -> dict[str, Any]:
    """(d): the write path and a scorer batch, with the tip_stats triggers on and off; with rebuild,
    (e): one full rebuild."""
    out: dict[str, Any] = {}
    rows_per_tip = conn.execute(
        "SELECT avg(retrievals) FROM ctxgraph.tip_stats WHERE tip_id = ANY (%s::bigint[])",
        ([t for p in plan for t in p[1]],)).fetchone()[0]
    out["d_log_rows_per_written_tip"] = float(rows_per_tip)

    # Warm the plan caches of the functions on a separate run, then the real passes: the same
    # attempts on two runs, first with the triggers, then without (plans differ by run only).
    write_path(conn, f"bench-write-{phase}-warmup", plan[-3:])
    with_trig = write_path(conn, f"bench-write-{phase}-triggers", plan[:-3])
    set_triggers(conn, False)
    try:
        no_trig = write_path(conn, f"bench-write-{phase}-no-triggers", plan[:-3])
    finally:
        set_triggers(conn, True)
        # Bring the stats of the tips written without triggers back in line.
        conn.execute("SELECT ctxgraph.refresh_tip_stats('stig', %s::bigint[])",
                     ([t for p in plan for t in p[1]],))
    out["d_write_with_triggers"] = {k: summary(v) for k, v in with_trig.items()}
    out["d_write_without_triggers"] = {k: summary(v) for k, v in no_trig.items()}

    # The scorer batch: args.scorer_rows unscored rows of one run per repetition, written and rolled
    # back three ways: with the triggers, without them, and the floor (SCORER_LEVEL_FLOOR: the
    # UPDATE without the triggers, then one keyed update of each level row it touches). The same
    # rows every way; the ways take turns going first.
    times: dict[str, list[float]] = {"with": [], "without": [], "floor": []}
    tips_touched: list[int] = []
    floor_rows: list[tuple[int, int, int]] = []
    for i, (ids, llm, emb, stamp) in enumerate(batches):
        tips_touched.append(conn.execute(
            "SELECT count(DISTINCT tip_id) FROM stig.tip_retrievals WHERE id = ANY (%s::bigint[])", (ids,)).fetchone()[0])
        ways = ["with", "without", "floor"]
        for way in ways[i % 3:] + ways[:i % 3]:
            with conn.transaction(force_rollback=True):
                if way != "with":
                    set_triggers(conn, False)
                t0 = time.perf_counter()
                cur = conn.execute(SCORER_UPDATE, (ids, llm, emb, stamp, SKILL))
                assert cur.rowcount == len(ids), cur.rowcount
                if way == "floor":
                    floor_rows.append(conn.execute(SCORER_LEVEL_FLOOR, {"skill": SKILL, "ids": ids}).fetchone())
                times[way].append((time.perf_counter() - t0) * 1000.0)
    out["d_scorer_rows"] = len(batches[0][0])
    out["d_scorer_tips_touched"] = statistics.median(tips_touched)
    out["d_scorer_with_triggers"] = summary(times["with"])
    out["d_scorer_without_triggers"] = summary(times["without"])
    out["d_scorer_level_floor"] = summary(times["floor"])
    out["d_scorer_level_floor_rows"] = [statistics.median(r[k] for r in floor_rows) for k in range(3)]
    # Every timing, batch by batch (one sample a way per batch): their spread says how far the medians'
    # ratio can be read (2.1x to 2.4x across the default runs in docs/benchmarks.md).
    out["d_scorer_samples_ms"] = {way: [round(t, 2) for t in ts] for way, ts in times.items()}

    # A full rebuild: what ctxgraph.refresh_tip_stats('stig') costs on this log (the parameters
    # trigger runs it when a follow.* coefficient changes). Once, in the [leaf] state a deployment
    # has. The [parents] figure beside it (80.0 s against 84.8 s at 1M rows on 2026-12-04) added
    # more than a minute to the bench and nothing to a decision.
    if not rebuild:
        return out
    with conn.transaction(force_rollback=True):
        ms, _ = timed(lambda: conn.execute("SELECT ctxgraph.refresh_tip_stats('stig')").fetchone())
    out["e_full_refresh_ms"] = ms
    return out


def plan_text(conn: psycopg.Connection, ids: list[int]) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of the ranker's read for one candidate set, with literal ids."""
    literal = "ARRAY[" + ",".join(str(int(i)) for i in ids) + "]::bigint[]"
    query = f"SELECT * FROM stig.tip_hit_rates WHERE tip_id = ANY ({literal})"
    rows = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + query).fetchall()
    return "\n".join(r[0] for r in rows)


def prepared_plan_text(conn: psycopg.Connection, ids: list[int]) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of the prepared read's generic plan (what a pooled ranker runs)."""
    conn.execute("DEALLOCATE ALL")
    conn.execute("PREPARE ranker_read (bigint[]) AS SELECT * FROM stig.tip_hit_rates WHERE tip_id = ANY ($1)")
    conn.execute("SET plan_cache_mode = force_generic_plan")
    try:
        literal = "ARRAY[" + ",".join(str(int(i)) for i in ids) + "]::bigint[]"
        rows = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS) EXECUTE ranker_read ({literal})").fetchall()
    finally:
        conn.execute("RESET plan_cache_mode")
        conn.execute("DEALLOCATE ranker_read")
    return "\n".join(r[0] for r in rows)


def table_facts(conn: psycopg.Connection) -> dict[str, Any]:
    """Row counts and sizes of the tables the benchmark reads."""
    row = conn.execute(
        """
        SELECT (SELECT count(*) FROM stig.tip_retrievals),
               (SELECT count(*) FROM stig.tip_retrievals WHERE tip_followed_computed_at IS NOT NULL),
               (SELECT count(*) FROM stig.tips),
               (SELECT count(DISTINCT rule_id) FROM stig.tips),
               (SELECT count(*) FROM stig.runs),
               (SELECT count(*) FROM stig.attempts),
               (SELECT count(*) FROM ctxgraph.tip_stats),
               pg_size_pretty(pg_relation_size('stig.tip_retrievals')),
               pg_size_pretty(pg_indexes_size('stig.tip_retrievals')),
               pg_size_pretty(pg_total_relation_size('stig.tip_stats')),
               pg_size_pretty(pg_total_relation_size('stig.tips')),
               (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY retrievals) FROM ctxgraph.tip_stats),
               (SELECT max(retrievals) FROM ctxgraph.tip_stats),
               current_setting('server_version'),
               current_setting('shared_buffers')
        """
    ).fetchone()
    keys = ("log_rows", "log_rows_scored", "tips", "rules", "runs", "attempts", "tip_stats_rows",
            "log_heap", "log_indexes", "tip_stats_size", "tips_size", "median_rows_per_tip", "max_rows_per_tip",
            "server_version", "shared_buffers")
    return dict(zip(keys, row))


def refresh_plan(conn: psycopg.Connection, phase: str, tips: list[int], rule_id: str) -> str:
    """The plan of refresh_tip_stats's aggregate as the insert trigger runs it for one 5-tip batch.

    Captured with auto_explain (nested statements, as NOTICEs); needs a superuser to LOAD it, and
    returns an explanation instead when that is not allowed.
    """
    notices: list[str] = []
    handler = lambda diag: notices.append(diag.message_primary or "")  # noqa: E731
    try:
        conn.execute("LOAD 'auto_explain'")
    except psycopg.Error as exc:
        return f"(auto_explain not available: {exc})"
    conn.add_notice_handler(handler)
    try:
        with conn.transaction(force_rollback=True):
            for setting, value in (("log_min_duration", "2ms"), ("log_analyze", "on"), ("log_buffers", "on"),
                                   ("log_timing", "off"), ("log_nested_statements", "on"), ("log_level", "notice")):
                conn.execute(f"SET LOCAL auto_explain.{setting} = '{value}'")
            conn.execute("SET LOCAL client_min_messages = notice")
            Client(conn).log_retrievals(SKILL, f"bench-explain-{phase}", rule_id, tips, [0.9, 0.8, 0.7, 0.6, 0.5])
    finally:
        conn.remove_notice_handler(handler)
    found = [n for n in notices if "UPDATE ctxgraph.tip_stats AS s" in n]
    if not found:
        return "(no plan captured)"
    text = found[0]
    # Keep the plan, not the long query text that precedes it.
    plan_start = text.find("\nUpdate on tip_stats")
    return text[:text.index("\n")] + text[plan_start:] if plan_start > 0 else text


# -- ingest: ctxgraph load in bulk against plain COPY and the per-call path, on the 1M-row history ------

INGEST_T0 = "2026-12-01T06:00:00+00:00"


def ingest_plan(conn: psycopg.Connection, rng: random.Random, attempts: int) -> list[tuple[str, int, list[int], bool]]:
    """attempts attempts spread over every rule (rule, attempt number, 5 of its tips, passed)."""
    by_rule: dict[str, list[int]] = {}
    for rule_id, tip_id in conn.execute("SELECT rule_id, id FROM stig.tips ORDER BY rule_id, id"):
        by_rule.setdefault(rule_id, []).append(tip_id)
    rules = sorted(by_rule)
    return [(rules[i % len(rules)], i // len(rules) + 1, rng.sample(by_rule[rules[i % len(rules)]], 5),
             rng.random() < 0.6) for i in range(attempts)]


def write_run_log(path: Path, run_id: str, plan: list[tuple[str, int, list[int], bool]]) -> None:
    """A run log in docs/run-log.md's format: per attempt a retrieval line, then its attempt line."""
    from datetime import datetime, timedelta

    t0 = datetime.fromisoformat(INGEST_T0)
    with path.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": "run_start", "run_id": run_id, "started_at": t0.isoformat()}) + "\n")
        for i, (rule_id, number, tips, passed) in enumerate(plan):
            at = t0 + timedelta(seconds=2 * i)
            fh.write(json.dumps({"type": "retrieval", "run_id": run_id, "rule_id": rule_id, "attempt_number": number,
                                 "retrieved_at": at.isoformat(),
                                 "tips": [{"tip_ref": f"t{t}", "similarity_score": round(0.9 - 0.05 * k, 3)}
                                          for k, t in enumerate(tips)]}) + "\n")
            fh.write(json.dumps({"type": "attempt", "run_id": run_id, "rule_id": rule_id, "attempt_number": number,
                                 "started_at": (at + timedelta(milliseconds=200)).isoformat(),
                                 "ended_at": (at + timedelta(seconds=1)).isoformat(),
                                 "fix_script": f"#!/bin/sh\n# {rule_id}\nsed -i 's/^X.*/X 1/' /etc/x.conf\n",
                                 "result": {"passed": passed, "failure_mode": None if passed else "clean_failure"}})
                     + "\n")
        fh.write(json.dumps({"type": "run_end", "run_id": run_id,
                             "ended_at": (t0 + timedelta(seconds=2 * len(plan) + 5)).isoformat()}) + "\n")


def log_rows(run_id: str, plan: list[tuple[str, int, list[int], bool]]) -> list[tuple]:
    """The tip_retrievals rows the log becomes (the same rows a plain COPY writes)."""
    from datetime import datetime, timedelta

    t0 = datetime.fromisoformat(INGEST_T0)
    rows = []
    for i, (rule_id, number, tips, passed) in enumerate(plan):
        outcome = (1.0 if number == 1 else 0.8 if number <= 3 else 0.5) if passed else 0.0
        for k, tip in enumerate(tips):
            rows.append(("stig", len(rows) + 1, run_id, i + 1, tip, rule_id, k + 1, round(0.9 - 0.05 * k, 3),
                         outcome, 1.0, t0 + timedelta(seconds=2 * i)))
    return rows


COPY_COLUMNS = ("skill, id, run_id, attempt_id, tip_id, rule_id, rank, similarity_score, outcome_value,"
                " outcome_confidence, retrieved_at")


def copy_ms(conn: psycopg.Connection, table: str, rows: list[tuple], reps: int) -> list[float]:
    """Client-side time of one COPY of rows into table, reps times (emptied between, untimed)."""
    out = []
    for _ in range(reps):
        conn.execute(f"TRUNCATE {table}")
        start = time.perf_counter()
        with conn.cursor() as cur, cur.copy(f"COPY {table} ({COPY_COLUMNS}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        out.append((time.perf_counter() - start) * 1000.0)
    return out


def per_attempt_series(conn: psycopg.Connection, skill: str, run_id: str, plan: list[tuple[str, int, list[int], bool]],
                       tip_map: Mapping[int, int] | None = None) -> list[float]:
    """The four per-call write functions per attempt, all in one transaction (as the per-call loader
    writes a file), rolled back; one timing per attempt in milliseconds."""
    client = Client(conn)
    times = []
    with conn.transaction(force_rollback=True):
        for rule_id, number, tips, passed in plan:
            ids = [tip_map[t] for t in tips] if tip_map else tips
            start = time.perf_counter()
            rids = client.log_retrievals(skill, run_id, rule_id, ids, [0.9, 0.85, 0.8, 0.75, 0.7])
            attempt = client.save_attempt(skill, run_id, rule_id, number)
            client.update_retrieval_attempt_ids(skill, rids, attempt)
            client.record_outcome(skill, attempt, passed, None if passed else "clean_failure")
            times.append((time.perf_counter() - start) * 1000.0)
    return times


def measure_ingest(args: argparse.Namespace, rng: random.Random, workdir: Path) -> dict[str, Any]:
    """Ingest of one run log on the 1M-row history: plain COPY of the same rows (unindexed, and with
    the log's indexes), ctxgraph load in bulk, the per-call path on a smaller sample, and the per-attempt
    write-path cost at this history against an empty log (a fresh skill holding the same tips)."""
    out: dict[str, Any] = {}
    with psycopg.connect(autocommit=True) as conn:
        conn.execute("SET client_min_messages = warning")
        plan = ingest_plan(conn, rng, args.ingest_attempts)
        history = conn.execute("SELECT count(*) FROM stig.tip_retrievals").fetchone()[0]
        bulk_log, call_log = workdir / "ingest-bulk.jsonl", workdir / "ingest-per-call.jsonl"
        write_run_log(bulk_log, "bench-ingest-bulk", plan)
        write_run_log(call_log, "bench-ingest-per-call", plan[: args.ingest_per_call])
        refs = {f"t{t}": t for _, _, tips, _ in plan for t in tips}
        rows = log_rows("bench-ingest-bulk", plan)
        out.update(history_rows=history, retrievals=len(rows), attempts=len(plan),
                   per_call_attempts=args.ingest_per_call, per_call_retrievals=5 * args.ingest_per_call,
                   log_bytes=bulk_log.stat().st_size)

        print("bench: [ingest] plain COPY ...", file=sys.stderr, flush=True)
        conn.execute("CREATE TABLE public.bench_copy_plain (LIKE ctxgraph.tip_retrievals)")
        conn.execute("CREATE TABLE public.bench_copy_indexed (LIKE stig.tip_retrievals INCLUDING INDEXES)")
        try:
            out["copy_plain"] = summary(copy_ms(conn, "public.bench_copy_plain", rows, args.ingest_reps))
            out["copy_indexed"] = summary(copy_ms(conn, "public.bench_copy_indexed", rows, args.ingest_reps))
            out["copy_indexed_count"] = conn.execute(
                "SELECT count(*) FROM pg_index WHERE indrelid = 'public.bench_copy_indexed'::regclass").fetchone()[0]
        finally:
            conn.execute("DROP TABLE public.bench_copy_plain, public.bench_copy_indexed")

        print("bench: [ingest] ctxgraph load (bulk) ...", file=sys.stderr, flush=True)
        expected = [loader.RunLoaded("bench-ingest-bulk", len(plan), len(rows))]

        def rolled_back_loads(prepare: Callable[[], Any]) -> list[float]:
            """args.ingest_reps bulk loads of the run log, each after prepare() in its own rolled-back
            transaction (so whatever prepare sets or disables comes back with the rollback)."""
            times = []
            for _ in range(args.ingest_reps):
                with conn.transaction(force_rollback=True):
                    prepare()
                    ms, loaded = timed(lambda: loader.load_run(conn, "stig", bulk_log, refs))
                assert loaded == expected, loaded
                times.append(ms)
            return times

        out["bulk_parse"] = summary([timed(lambda: list(loader.stage_lines(bulk_log, refs)))[0]
                                     for _ in range(args.ingest_reps)])
        out["bulk_load"] = summary(rolled_back_loads(lambda: None))

        # The maintained levels' share of it: the same load with the key checks but without the
        # tip_stats triggers.
        out["bulk_no_levels"] = summary(rolled_back_loads(lambda: set_triggers(conn, False)))

        # The floor beside it: the same load with no trigger and no foreign-key check
        # (session_replication_role = replica, a superuser's setting), so that only the log's rows,
        # its indexes and the loader's own parsing, checks and staging remain: the most any load
        # that keeps those could reach. Not measured without superuser rights.
        if conn.execute("SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user").fetchone()[0]:
            out["bulk_floor"] = summary(rolled_back_loads(
                lambda: conn.execute("SET LOCAL session_replication_role = replica")))

        print("bench: [ingest] ctxgraph load --per-call ...", file=sys.stderr, flush=True)
        with conn.transaction(force_rollback=True):
            ms, _ = timed(lambda: loader.load_run(conn, "stig", call_log, refs, bulk=False))
        out["per_call_load_ms"] = ms

        print("bench: [ingest] per-attempt write path, 1M-row log and an empty one ...", file=sys.stderr, flush=True)
        sample = plan[: args.ingest_per_call]
        at_history = per_attempt_series(conn, "stig", "bench-ingest-series", sample)
        conn.execute("SELECT ctxgraph.add_skill('bench_empty', 'graded')")
        try:
            tip_ids = sorted({t for _, _, tips, _ in sample for t in tips})
            new_ids = [r[0] for r in conn.execute(
                "INSERT INTO bench_empty.tips (rule_id, body)"
                " SELECT t.rule_id, t.body FROM stig.tips AS t JOIN unnest(%s::bigint[]) WITH ORDINALITY AS u (id, ord)"
                " ON u.id = t.id ORDER BY u.ord RETURNING id", (tip_ids,))]
            conn.execute("ANALYZE bench_empty.tips")
            empty = per_attempt_series(conn, "bench_empty", "bench-ingest-series", sample, dict(zip(tip_ids, new_ids)))
        finally:
            conn.execute("SELECT ctxgraph.drop_skill('bench_empty')")
        tenth = max(1, len(sample) // 10)
        for name, series in (("history", at_history), ("empty", empty)):
            out[f"attempt_{name}"] = summary(series)
            out[f"attempt_{name}_first"] = summary(series[:tenth])
            out[f"attempt_{name}_last"] = summary(series[-tenth:])
        out["series_tenth"] = tenth

    out["bulk_rate"] = out["retrievals"] / (out["bulk_load"]["median_ms"] / 1000.0)
    out["copy_plain_rate"] = out["retrievals"] / (out["copy_plain"]["median_ms"] / 1000.0)
    out["copy_indexed_rate"] = out["retrievals"] / (out["copy_indexed"]["median_ms"] / 1000.0)
    out["per_call_rate"] = out["per_call_retrievals"] / (out["per_call_load_ms"] / 1000.0)
    out["bulk_share_of_copy"] = out["bulk_rate"] / out["copy_plain_rate"]
    out["bulk_no_levels_rate"] = out["retrievals"] / (out["bulk_no_levels"]["median_ms"] / 1000.0)
    out["bulk_no_levels_share_of_copy"] = out["bulk_no_levels_rate"] / out["copy_plain_rate"]
    if "bulk_floor" in out:
        out["bulk_floor_rate"] = out["retrievals"] / (out["bulk_floor"]["median_ms"] / 1000.0)
        out["bulk_floor_share_of_copy"] = out["bulk_floor_rate"] / out["copy_plain_rate"]
    return out


PHASES = (
    ("leaf", "leaf statistics only: the partitions ANALYZEd (what autovacuum maintains), the partitioned "
             "ctxgraph.* parents never (autovacuum does not analyze partitioned tables)"),
    ("parents", "after ANALYZE ctxgraph.runs, ctxgraph.attempts, ctxgraph.tips, ctxgraph.tip_retrievals, "
                "ctxgraph.tip_stats (the parents' inheritance statistics)"),
)


def measure_eviction(conn: psycopg.Connection, args: argparse.Namespace) -> dict[str, Any]:
    """Eviction at this size: the attribution fit, then the dry run, the candidates view and tip_evidence.

    The dry run, the view and tip_evidence at now() read the maintained levels and the stored fit
    (a second ensure_fit only reads fit_state: nothing changed); tip_evidence at an instant inside the log reads the log, which is what
    every call cost before the levels existed, so it stands beside them as the baseline. `ctxgraph
    audit` runs as an operator would run it, its output discarded.
    """
    out: dict[str, Any] = {}
    middle = conn.execute("SELECT min(retrieved_at) + (max(retrieved_at) - min(retrieved_at)) / 2"
                          " FROM ctxgraph.tip_retrievals WHERE skill = 'stig'").fetchone()[0]
    print("bench: eviction: the attribution fit (ctxgraph.fit) ...", file=sys.stderr, flush=True)
    conn.commit()
    fit_ms, run = timed(lambda: ensure_fit(conn, "stig", full=True))
    out["effects_fit_ms"] = fit_ms
    out["effects_methods"] = dict(conn.execute(
        "SELECT method, count(*) FROM ctxgraph.tip_effects WHERE skill = 'stig' GROUP BY method").fetchall())
    out["effects_fitted"] = run.tips_with_evidence
    # The blame fit inside it: which method the size called for, and whether it settled.
    out["blame"] = conn.execute(
        "SELECT parameters ->> 'blame_method', (parameters ->> 'blame_sweeps')::int, (parameters ->> 'blame_converged')::boolean,"
        "       count(*) FILTER (WHERE misleading_probability IS NOT NULL), (parameters ->> 'blame_moving_tips')::int"
        "  FROM ctxgraph.tip_effects WHERE skill = 'stig' GROUP BY 1, 2, 3, 5 ORDER BY 4 DESC LIMIT 1").fetchone()
    conn.commit()
    reuse = [timed(lambda: ensure_fit(conn, "stig"))[0] for _ in range(args.eviction_reps)]
    out["effects_reuse"] = summary(reuse)
    dry = [timed(lambda: conn.execute("SELECT count(*) FROM ctxgraph.evict_tips('stig')").fetchone())
           for _ in range(args.eviction_reps)]
    out["dry_run"] = summary([t for t, _ in dry])
    out["dry_run_candidates"] = dry[0][1][0]
    out["dry_run_reasons"] = dict(conn.execute(
        "SELECT split_part(reason, ':', 1), count(*) FROM ctxgraph.evict_tips('stig') GROUP BY 1 ORDER BY 1").fetchall())
    out["candidates_view"] = summary([timed(lambda: conn.execute(
        "SELECT count(*) FROM stig.eviction_candidates").fetchone())[0] for _ in range(args.eviction_reps)])
    out["tip_evidence_now"] = summary([timed(lambda: conn.execute(
        "SELECT count(*) FROM ctxgraph.tip_evidence('stig')").fetchone())[0] for _ in range(args.eviction_reps)])
    print("bench: eviction: tip_evidence from the log (an instant inside it) ...", file=sys.stderr, flush=True)
    out["tip_evidence_log_ms"], _ = timed(lambda: conn.execute(
        "SELECT count(*) FROM ctxgraph.tip_evidence('stig', %s)", [middle]).fetchone())
    cli = Path(sys.executable).with_name("ctxgraph")
    if cli.exists():
        print("bench: eviction: ctxgraph audit ...", file=sys.stderr, flush=True)
        began = time.perf_counter()
        # The libpq variables name the bench database; a DATABASE_URL would win over them.
        env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        done = subprocess.run([str(cli), "audit", "--skill", "stig"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, check=False, env=env)
        out["audit_ms"] = (time.perf_counter() - began) * 1000.0
        out["audit_status"] = done.returncode
    return out


def measure_id_lookups(conn: psycopg.Connection, rng: random.Random, count: int = 3500, reps: int = 5) -> dict[str, Any]:
    """Reads of `count` log rows by id alone on the skill's own table, beside the same through the
    parent with its skill: the per-skill table has its own index on id (index_partition_ids)."""
    every_id = [row[0] for row in conn.execute("SELECT id FROM stig.tip_retrievals")]
    ids = rng.sample(every_id, min(count, len(every_id)))
    ways = {
        "per_skill_table": "SELECT count(*) FROM stig.tip_retrievals WHERE id = ANY (%s)",
        "parent_with_skill": "SELECT count(*) FROM ctxgraph.tip_retrievals WHERE skill = 'stig' AND id = ANY (%s)",
    }
    out: dict[str, Any] = {"ids": len(ids)}
    for name, query in ways.items():
        samples = []
        for _ in range(reps):
            ms, found = timed(lambda q=query: conn.execute(q, (ids,)).fetchone()[0])
            if found != len(ids):
                raise RuntimeError(f"id lookup ({name}) found {found} of {len(ids)} rows")
            samples.append(ms)
        out[name] = summary(samples)
    out["ratio_per_skill_over_parent"] = out["per_skill_table"]["median_ms"] / out["parent_with_skill"]["median_ms"]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run every measurement in both statistics states, write the plans and the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--candidates", type=int, default=50)
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--scratch-reads", type=int, default=30)
    # The whole-log read takes seconds at 1M rows and its runs differ by about 1% (three in each
    # phase: 5,429 / 5,495 ms and 5,415 / 5,484 ms, median / slowest): one run per phase is its figure.
    parser.add_argument("--full-reads", type=int, default=1)
    parser.add_argument("--writes", type=int, default=40)
    parser.add_argument("--scorer-rows", type=int, default=3500)
    parser.add_argument("--scorer-reps", type=int, default=5)
    parser.add_argument("--eviction-reps", type=int, default=3)
    parser.add_argument("--ingest-attempts", type=int, default=10000, help="attempts in the bulk run log (5 tips each)")
    parser.add_argument("--ingest-per-call", type=int, default=500, help="attempts loaded by the per-call path")
    parser.add_argument("--ingest-reps", type=int, default=3)
    parser.add_argument("--only", choices=("ingest",), help="run one section only (the history must already be loaded)")
    parser.add_argument("--json", required=True, help="where to write the figures")
    parser.add_argument("--plan", required=True, help="where to write the ranker's EXPLAIN output")
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    results: dict[str, Any] = {"cpus": os.cpu_count(), "args": {k: v for k, v in vars(args).items()
                                                                 if k not in ("json", "plan")},
                               "phases": {}}
    plan_dir = os.path.dirname(os.path.abspath(args.plan))
    if args.only == "ingest":
        results["ingest"] = measure_ingest(args, random.Random(args.seed + 1), Path(plan_dir))
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=2, default=str)
        return 0
    with psycopg.connect(autocommit=True) as conn:
        results["facts"] = table_facts(conn)
        results["load"] = [
            {"step": r[0], "rows": r[1], "seconds": r[2]}
            for r in conn.execute("SELECT step, rows, seconds FROM public.bench_load ORDER BY n")
        ]
        tip_ids = [row[0] for row in conn.execute("SELECT id FROM stig.tips ORDER BY id")]
        id_sets = [sorted(rng.sample(tip_ids, args.candidates)) for _ in range(args.reads)]
        plan = write_plan(conn, rng, args.writes + 3)
        batches = scorer_batches(conn, rng, args)
        explain_tips = write_plan(conn, rng, 1)[0]
    # A replica load ends in one refresh_tip_stats('stig') on the analysed log: that is the full
    # rebuild's figure, and measuring it again costs more than a minute at 1M rows. A load through
    # the triggers has none, so the [leaf] phase measures it.
    load_rebuild = next((r for r in results["load"] if r["step"].startswith("tip_stats rebuilt once")), None)

    for phase, description in PHASES:
        if phase == "parents":
            with psycopg.connect(autocommit=True) as conn:
                ms, _ = timed(lambda: conn.execute(
                    "ANALYZE ctxgraph.runs, ctxgraph.attempts, ctxgraph.tips, ctxgraph.tip_retrievals,"
                    " ctxgraph.tip_stats"))
                results["analyze_parents_ms"] = ms
        # A fresh session per phase: no plan cached under the other statistics.
        with psycopg.connect(autocommit=True) as conn:
            out: dict[str, Any] = {"description": description}
            step = time.perf_counter()
            print(f"bench: [{phase}] (a)-(c) reads ...", file=sys.stderr, flush=True)
            out.update(measure_reads(conn, id_sets, args))
            plain = plan_text(conn, id_sets[0])
            out["plan_buffers"] = int(re.findall(r"Buffers: shared hit=(\d+)", plain)[0])
            if phase == "leaf":
                with open(args.plan, "w", encoding="utf-8") as fh:
                    fh.write("-- EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM stig.tip_hit_rates WHERE tip_id = ANY (<50 ids>)\n")
                    fh.write(plain + "\n\n")
                    fh.write("-- the same read prepared, generic plan (plan_cache_mode = force_generic_plan)\n")
                    fh.write(prepared_plan_text(conn, id_sets[0]) + "\n")
            else:
                with open(os.path.join(plan_dir, "plan-parents-analyzed.txt"), "w", encoding="utf-8") as fh:
                    fh.write(plain + "\n")
            first = refresh_plan(conn, f"{phase}-first", explain_tips[1], explain_tips[0])
            print(f"bench: [{phase}] (d) writes ...", file=sys.stderr, flush=True)
            out.update(measure_writes(conn, phase, plan, batches, rebuild=phase == "leaf" and load_rebuild is None))
            if phase == "leaf" and load_rebuild is not None:
                out["e_full_refresh_ms"] = load_rebuild["seconds"] * 1000
                out["e_full_refresh_at_load"] = True
            later = refresh_plan(conn, f"{phase}-later", explain_tips[1], explain_tips[0])
            with open(os.path.join(plan_dir, f"refresh-plan-{phase}.txt"), "w", encoding="utf-8") as fh:
                fh.write("-- first insert trigger of the session\n" + first + "\n\n")
                fh.write("-- the same after the write series (plans cached by the session)\n" + later + "\n")
            out["seconds"] = time.perf_counter() - step
            results["phases"][phase] = out
    with psycopg.connect(autocommit=True) as conn:
        results["eviction"] = measure_eviction(conn, args)
        print("bench: lookups by id ...", file=sys.stderr, flush=True)
        results["id_lookups"] = measure_id_lookups(conn, random.Random(args.seed + 2))
    # After both phases, so the rows it writes and rolls back never reach their figures.
    results["ingest"] = measure_ingest(args, random.Random(args.seed + 1), Path(plan_dir))
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump(results, fh, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
