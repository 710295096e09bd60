"""The ctxgraph client: ``from ctxgraph.client import Client``.

:class:`Client` makes one parameterised call per public SQL function and per-skill view (the agent's
write path, the ranker's and the eviction job's reads), modelled on pgmq's Python client: no logic,
and the caller owns the connection and the transaction. :func:`connect`, :func:`run_in_transaction`
and :data:`DEADLOCK_RETRIES`, which a caller needs beside it, are imported from here too (they live
in :mod:`ctxgraph.connection_store`).

Only ctxgraph's SQL modules execute statements: :mod:`ctxgraph.client` (the public :class:`Client`) and
the stores, each a module named ``*_store.py`` beside the code it serves (``connection_store``,
``scoring_store``, ``simulate_store``, ``audit_store``; the fit's is ``ctxgraph.fit.store``).
tests/test_client.py holds their list; no other module calls ``execute``, ``executemany``, ``copy``
or ``cursor``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from ctxgraph.connection_store import DEADLOCK_RETRIES, connect, run_in_transaction

__all__ = ["DEADLOCK_RETRIES", "Client", "connect", "run_in_transaction"]

Row = dict[str, Any]

# ctxgraph.ingest_staging()'s table, in the order Client.ingest_run_log's rows carry them.
_STAGING_COLUMNS = ("line", "kind", "run_id", "rule_id", "attempt_number", "retrieved_at", "tip_ids",
                    "similarity_scores", "approach", "started_at", "ended_at", "passed", "failure_mode")


class Client:
    """One method per public SQL function and per-skill view; the caller owns connection and transaction.

    Modelled on pgmq's Python client: each method is one parameterised statement and nothing else (no
    retries, no commits, no checks that the SQL does not already make). A caller that writes several
    calls in one transaction runs them through :func:`run_in_transaction`, which retries a deadlock. An optional argument left None
    is not passed at all, so the SQL function's own default applies (``now()`` for ``as_of`` and
    ``retrieved_at``). Set-returning functions and views come back as lists of dicts keyed by column.
    SQL errors surface as psycopg exceptions with their documented SQLSTATEs (docs/operations.md).
    """

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn

    # -- internals: compose ``ctxgraph.fn(a, b, name => c)`` with only the arguments given ------------
    def _call(self, function: str, args: Sequence[Any], named: Mapping[str, Any] | None = None,
              *, rows: bool = False) -> Any:
        given = {name: value for name, value in (named or {}).items() if value is not None}
        parts = [_placeholder(value) for value in args]
        parts += [sql.SQL("{} => {}").format(sql.Identifier(name), _placeholder(value))
                  for name, value in given.items()]
        call = sql.SQL("ctxgraph.{}({})").format(sql.Identifier(function), sql.SQL(", ").join(parts))
        params = [_value(v) for v in [*args, *given.values()]]
        if rows:
            with self.conn.cursor(row_factory=dict_row) as cur:
                return cur.execute(sql.SQL("SELECT * FROM {}").format(call), params).fetchall()
        row = self.conn.execute(sql.SQL("SELECT {}").format(call), params).fetchone()
        return row[0] if row else None

    def _view(self, skill: str, view: str, order: str, where: str = "TRUE", params: Sequence[Any] = ()) -> list[Row]:
        # Per-skill views live in the skill's schema; the name is quoted as an identifier, never pasted.
        # ``where`` and ``order`` are this module's own constant SQL, never caller input.
        query = sql.SQL("SELECT * FROM {} WHERE {} ORDER BY {}").format(
            sql.Identifier(skill, view), sql.SQL(where), sql.SQL(order))
        with self.conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(query, params).fetchall()

    # -- the write path (role ctxgraph_writer) ---------------------------------------------------------
    def save_attempt(self, skill: str, run_id: str, rule_id: str, attempt_number: int,
                     approach: str | None = None, started_at: datetime | None = None,
                     ended_at: datetime | None = None) -> int:
        """ctxgraph.save_attempt: save an attempt, return its id."""
        return int(self._call("save_attempt", [skill, run_id, rule_id, attempt_number],
                              {"approach": approach, "started_at": started_at, "ended_at": ended_at}))

    def log_retrievals(self, skill: str, run_id: str, rule_id: str, tip_ids: Sequence[int],
                       similarity_scores: Sequence[float | None],
                       retrieved_at: datetime | None = None) -> list[int]:
        """ctxgraph.log_retrievals: log one batch of retrieved tips; return their ids in rank order."""
        given = {"retrieved_at": retrieved_at} if retrieved_at is not None else {}
        rows = self._call("log_retrievals", [skill, run_id, rule_id, _bigints(tip_ids),
                                             _floats(similarity_scores)], given, rows=True)
        return [int(row["log_retrievals"]) for row in rows]

    def update_retrieval_attempt_ids(self, skill: str, retrieval_ids: Sequence[int], attempt_id: int) -> int:
        """ctxgraph.update_retrieval_attempt_ids: link logged retrievals to their attempt; return rows linked."""
        return int(self._call("update_retrieval_attempt_ids", [skill, _bigints(retrieval_ids), attempt_id]))

    def record_outcome(self, skill: str, attempt_id: int, passed: bool, failure_mode: str | None = None,
                       ended_at: datetime | None = None) -> int:
        """ctxgraph.record_outcome: record the evaluator's result; return the retrievals given an outcome."""
        return int(self._call("record_outcome", [skill, attempt_id, passed],
                              {"failure_mode": failure_mode, "ended_at": ended_at}))

    def ingest_run_log(self, skill: str, lines: Iterable[Sequence[Any]]) -> list[Row]:
        """ctxgraph.ingest_run_log: write a whole run log in three statements; return its runs' counts.

        ``lines`` are staging rows in the column order of ``ctxgraph.ingest_staging`` (line number,
        kind, run_id, rule_id, attempt_number, retrieved_at, tip_ids, similarity_scores, approach,
        started_at, ended_at, passed, failure_mode): the staging table is made, filled with one COPY,
        and written by the SQL function, which raises the per-call SQLSTATEs naming the bad line.
        Returns one dict per run (run_id, attempts, retrievals) in order of first appearance.
        """
        staging = self.conn.execute("SELECT ctxgraph.ingest_staging()").fetchone()[0]
        columns = sql.SQL(", ").join(sql.Identifier(c) for c in _STAGING_COLUMNS)
        with self.conn.cursor(row_factory=dict_row) as cur:
            with cur.copy(sql.SQL("COPY {} ({}) FROM STDIN").format(
                    sql.Identifier(*staging.split(".")), columns)) as copy:
                for line in lines:
                    copy.write_row(line)
            return cur.execute("SELECT * FROM ctxgraph.ingest_run_log(%s)", (skill,)).fetchall()

    # -- scoring semantics ---------------------------------------------------------------------------
    def graded_outcome(self, skill: str, passed: bool, attempt_number: int,
                       failure_mode: str | None = None) -> float:
        """ctxgraph.graded_outcome: the outcome value of a result (DEF-26)."""
        return float(self._call("graded_outcome", [skill, passed, attempt_number], {"failure_mode": failure_mode}))

    def follow_weight(self, llm: bool | None, emb: float | None) -> float:
        """ctxgraph.follow_weight: the follow weight of a judge verdict and a cosine (DEF-27)."""
        return float(self.conn.execute("SELECT ctxgraph.follow_weight(%s::boolean, %s::double precision)",
                                       (llm, emb)).fetchone()[0])

    def tip_followed(self, llm: bool | None, emb: float | None) -> bool | None:
        """ctxgraph.tip_followed: the same decision as a boolean (NULL when neither leg has a value)."""
        return self.conn.execute("SELECT ctxgraph.tip_followed(%s::boolean, %s::double precision)",
                                 (llm, emb)).fetchone()[0]

    # -- the ranker and the eviction job ---------------------------------------------------------------
    def tip_hit_rates(self, skill: str, tip_ids: Sequence[int]) -> list[Row]:
        """<skill>.tip_hit_rates for a set of candidate tips (the ranker's read), in tip id order."""
        return self._view(skill, "tip_hit_rates", "tip_id", "tip_id = ANY (%s::bigint[])", [_bigints(tip_ids).value])

    def rule_ranking(self, skill: str, rule_id: str) -> list[Row]:
        """ctxgraph.rule_ranking: a rule's tips ranked before (outcome-only) and after (follow-weighted)."""
        return self._call("rule_ranking", [skill, rule_id], rows=True)

    def eviction_candidates(self, skill: str) -> list[Row]:
        """<skill>.eviction_candidates: what evict_tips would retire now."""
        return self._view(skill, "eviction_candidates", "tip_id")

    def evict_tips(self, skill: str, as_of: datetime | None = None, dry_run: bool = True) -> list[Row]:
        """ctxgraph.evict_tips: retire (or, by default, only preview) the eviction candidates."""
        return self._call("evict_tips", [skill], {"as_of": as_of, "dry_run": dry_run}, rows=True)

    def restore_tip(self, skill: str, tip_id: int, as_of: datetime | None = None) -> bool:
        """ctxgraph.restore_tip: undo a retirement; True when the tip was retired."""
        return bool(self._call("restore_tip", [skill, tip_id], {"as_of": as_of}))

    def fit_state(self, skill: str, as_of: datetime | None = None):
        """ctxgraph.fit_state: whether the stored fit is that of the evidence up to as_of, or how stale."""
        from ctxgraph.fit import fit_state

        return fit_state(self.conn, skill, as_of)

    def fit(self, skill: str, as_of: datetime | None = None, full: bool = False):
        """Refit the skill's per-tip effects and blame (ctxgraph.fit) unless the stored fit is current."""
        from ctxgraph.fit import ensure_fit

        return ensure_fit(self.conn, skill, as_of, full=full)

    def tip_evidence(self, skill: str, as_of: datetime | None = None) -> list[Row]:
        """ctxgraph.tip_evidence: the evidence behind eviction, per tip, as of an instant."""
        return self._call("tip_evidence", [skill], {"as_of": as_of}, rows=True)

    # -- audit reads -------------------------------------------------------------------------------------
    def misleading_tips(self, skill: str) -> list[Row]:
        """<skill>.misleading_tips: high outcome-only rate, low follow rate (ADR audit section 4)."""
        return self._view(skill, "misleading_tips", "credit_gap DESC, tip_id")

    def harmful_when_followed(self, skill: str) -> list[Row]:
        """<skill>.harmful_when_followed: tips whose effect when followed is shown harmful."""
        return self._view(skill, "harmful_when_followed", "effect_upper_bound, tip_id")

    def harmful_tips(self, skill: str) -> list[Row]:
        """<skill>.harmful_tips: tips followed in attempts that broke the system."""
        return self._view(skill, "harmful_tips", "harm DESC, tip_id")

    def scored_retrievals(self, skill: str, run_id: str | None = None) -> list[Row]:
        """<skill>.scored_retrievals: one row per retrieval with its credit and follow weight (all runs or one)."""
        return self._view(skill, "scored_retrievals", "retrieval_id", "(%s::text IS NULL OR run_id = %s)",
                          [run_id, run_id])

    # -- the follow signal's calibration -------------------------------------------------------------------
    def save_follow_calibration(self, skill: str, signal_version: str, method: str, feature_names: Sequence[str],
                                coefficients: Sequence[float], intercept: float, fitted_on: str, source: str,
                                examples: int, positives: int, cv_auc: float | None = None,
                                cv_accuracy: float | None = None, cv_folds: int | None = None,
                                cascade_low: float | None = None, cascade_high: float | None = None,
                                cascade_max_disagreement: float | None = None) -> int:
        """ctxgraph.save_follow_calibration: store a fitted calibration with its provenance; returns its id."""
        return int(self._call(
            "save_follow_calibration",
            [skill, signal_version, method, _Typed(list(feature_names), "text[]"),
             _Typed([float(c) for c in coefficients], "double precision[]"), float(intercept), fitted_on, source,
             int(examples), int(positives)],
            {"cv_auc": cv_auc, "cv_accuracy": cv_accuracy, "cv_folds": cv_folds, "cascade_low": cascade_low,
             "cascade_high": cascade_high, "cascade_max_disagreement": cascade_max_disagreement}))

    def current_follow_calibration(self, skill: str, signal_version: str) -> Row | None:
        """ctxgraph.current_follow_calibration: the skill's latest calibration for a signal version, or None."""
        rows = self._call("current_follow_calibration", [skill, signal_version], rows=True)
        return rows[0] if rows else None

    def cascade_track_record(self, skill: str, calibration_id: int | None, signal_version: str, judge_model: str,
                             band: tuple[float, float], other_than_run: str | None = None) -> Row:
        """ctxgraph.cascade_track_record: the cascade's evidence from the skill's earlier runs (questions,
        outside_band, checked, disagreed) for one calibration (None: the default), signal and judge."""
        rows = self._call("cascade_track_record",
                          [skill, _Typed(calibration_id, "bigint"), signal_version, judge_model, band[0], band[1],
                           _Typed(other_than_run, "text")], rows=True)
        return rows[0]

    def follow_label_metrics(self, skill: str, retrieval_ids: Sequence[int], gold: Sequence[bool]) -> list[Row]:
        """ctxgraph.follow_label_metrics: each leg against gold labels (accuracy, kappa, AUC, thresholds)."""
        return self._call("follow_label_metrics", [skill, _bigints(retrieval_ids), _booleans(gold)], rows=True)


@dataclass(frozen=True)
class _Typed:
    """A parameter with its SQL type spelled out (arrays: psycopg cannot infer bigint[] from [] or [1])."""

    value: Any
    type: str


def _bigints(values: Iterable[int]) -> _Typed:
    return _Typed([int(v) for v in values], "bigint[]")


def _floats(values: Iterable[float | None]) -> _Typed:
    return _Typed([None if v is None else float(v) for v in values], "double precision[]")


def _booleans(values: Iterable[bool]) -> _Typed:
    return _Typed([bool(v) for v in values], "boolean[]")


def _placeholder(value: Any) -> sql.Composable:
    if isinstance(value, _Typed):
        return sql.SQL("{}::" + value.type).format(sql.Placeholder())
    return sql.Placeholder()


def _value(value: Any) -> Any:
    return value.value if isinstance(value, _Typed) else value
