"""The only module that speaks SQL. Nothing else in ctxgraph calls ``conn.execute``.

- :class:`Client`: one parameterised call per public SQL function and per-skill view (the agent's
  write path, the ranker's and the eviction job's reads), modelled on pgmq's Python client: no logic,
  and the caller owns the connection and the transaction.
- :func:`run_in_transaction`: runs a unit of work in one transaction and runs it again when
  PostgreSQL breaks a deadlock by aborting it (40P01); the loader's way to write a file.
- :class:`Store`: the scoring pass's reads and batched writes, the loader's tip lookups, the label
  resolution of ``ctxgraph evaluate``, and :func:`run_audit_file`, which runs the analysts'
  ``sql/audit`` files with the psql variables bound as parameters.

Every statement is parameterised; every batch is one statement (``UPDATE ... FROM unnest(...)`` or
``INSERT ... SELECT unnest(...)``), never a round trip per row. Nothing here commits on its own.
"""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import errors, pq, sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

__all__ = [
    "AuditFileError",
    "AuditResult",
    "CachedVerdict",
    "ClaimedRow",
    "Client",
    "DEADLOCK_RETRIES",
    "DatabaseError",
    "RowScore",
    "SimulatorStore",
    "Store",
    "UnknownSkill",
    "VerdictKey",
    "connect",
    "require_skill",
    "run_audit_file",
    "run_in_transaction",
]

T = TypeVar("T")

#: How many times :func:`run_in_transaction` runs a unit of work again after a deadlock aborted it.
DEADLOCK_RETRIES = 3
#: Seconds :func:`run_in_transaction` waits (times the retry's number, with jitter) before a retry.
DEADLOCK_BACKOFF = 0.05


class DatabaseError(RuntimeError):
    """The database could not be reached or refused a request; the message says which."""


class UnknownSkill(DatabaseError):
    """The skill is not registered in ctxgraph.skills; the message lists the registered ones."""


def require_skill(conn: psycopg.Connection, skill: str) -> str:
    """Return the skill's grading mode; raise UnknownSkill (one wording for every command) if it has none."""
    try:
        row = conn.execute("SELECT grading FROM ctxgraph.skills WHERE name = %s", (skill,)).fetchone()
    except (psycopg.errors.InvalidSchemaName, psycopg.errors.UndefinedTable) as exc:
        conn.rollback()
        raise DatabaseError("ctxgraph is not deployed in this database (no ctxgraph.skills): "
                            "deploy it with sqitch first") from exc
    if row is None:
        known = [r[0] for r in conn.execute("SELECT name FROM ctxgraph.skills ORDER BY name")]
        raise UnknownSkill(f"unknown skill {skill!r}; registered skills: {', '.join(known) or 'none'}")
    return str(row[0])


def connect(dsn: str | None = None) -> psycopg.Connection:
    """Open a connection to ``dsn`` (default: DATABASE_URL, else the libpq variables) with pgvector."""
    target = dsn if dsn is not None else os.environ.get("DATABASE_URL", "")
    try:
        conn = psycopg.connect(target, autocommit=False)
    except psycopg.OperationalError as exc:
        raise DatabaseError(f"cannot connect to the database: {str(exc).strip()}") from exc
    try:
        register_vector(conn)
    except psycopg.ProgrammingError as exc:
        conn.close()
        raise DatabaseError("the vector extension is missing: deploy ctxgraph with sqitch first") from exc
    conn.rollback()
    return conn


@dataclass(frozen=True)
class ClaimedRow:
    """One unscored retrieval, with what the pass needs to find its script and its tip."""

    retrieval_id: int
    run_id: str
    rule_id: str
    attempt_id: int | None
    attempt_number: int | None
    retrieved_at: datetime
    tip_id: int
    tip_body: str
    stamped: bool = False  # claimed again by --rescore


@dataclass(frozen=True)
class RowScore:
    """What the pass writes back for one retrieval. Whether it is stamped (tip_followed_computed_at
    set) is ctxgraph.write_scoring_results' decision, from the two statuses."""

    retrieval_id: int
    llm: bool | None
    emb: float | None
    llm_status: str
    emb_status: str
    judge_model: str | None
    prompt_sha256: str | None
    embed_model: str | None
    embed_mode: str | None
    script_sha256: str | None
    follow_probability: float | None = None
    signal_status: str = "signal_skipped"
    calibration_id: int | None = None
    signal_version: str | None = None
    follow_evidence: dict | None = None


@dataclass(frozen=True)
class VerdictKey:
    tip_sha256: str
    script_sha256: str
    model: str
    prompt_sha256: str


@dataclass(frozen=True)
class CachedVerdict:
    followed: bool | None
    reasoning: str | None
    error: str | None
    response_format: str | None


Row = dict[str, Any]

# ctxgraph.ingest_staging()'s table, in the order Client.ingest_run_log's rows carry them.
_STAGING_COLUMNS = ("line", "kind", "run_id", "rule_id", "attempt_number", "retrieved_at", "tip_ids",
                    "similarity_scores", "approach", "started_at", "ended_at", "passed", "failure_mode")


def run_in_transaction(conn: psycopg.Connection, work: Callable[[], T], *,
                       deadlock_retries: int = DEADLOCK_RETRIES) -> T:
    """Run ``work()`` in one transaction of ``conn`` and commit it; return what it returns.

    The triggers that keep ``tip_stats`` lock each tip's row until the transaction ends, in tip order
    within a statement. A transaction of several statements (the per-call write path: one
    ``log_retrievals`` per prompt) takes them in the order its statements come, so two writers that
    log tips X then Y and Y then X wait for each other, and PostgreSQL aborts one with 40P01
    (deadlock_detected). Nothing of the aborted transaction was written and the other one goes on,
    so the work is run again from the start, as a new transaction, up to ``deadlock_retries`` times;
    a further deadlock raises. Each retry first waits a little (``DEADLOCK_BACKOFF`` seconds times
    the retry's number, with jitter) so that the transaction that went on takes the rows it was
    waiting for before the retry asks for them again. ``work`` must therefore do nothing but database work that may be
    repeated (the loader's replay of a file). Inside a transaction the caller already holds (a
    savepoint), the locks taken earlier would still be held, so the work runs once and a deadlock
    raises as it is.
    """
    retries = deadlock_retries if conn.info.transaction_status == pq.TransactionStatus.IDLE else 0
    retried = 0
    while True:
        try:
            with conn.transaction():
                return work()
        except errors.DeadlockDetected:
            if retried >= retries:
                raise
            retried += 1
            time.sleep(DEADLOCK_BACKOFF * retried * random.uniform(0.5, 1.5))


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


class Store:
    """The scoring pass's SQL, on a connection the caller owns (and commits)."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn

    def skill_grading(self, skill: str) -> str:
        """Return the skill's grading mode; raise UnknownSkill for an unknown skill."""
        return require_skill(self.conn, skill)

    # -- the pass's leases (deploy/scoring_leases.sql owns the rules) -------------------------------
    def begin_pass(self) -> str:
        """Name a new pass and mark this session as running it; its leases end with the session."""
        return str(self.conn.execute("SELECT ctxgraph.begin_scoring_pass()").fetchone()[0])

    def end_pass(self, skill: str, pass_id: str) -> int:
        """Release the pass's remaining leases and its session lock; return the leases released."""
        return int(self.conn.execute("SELECT ctxgraph.end_scoring_pass(%s, %s)", (skill, pass_id)).fetchone()[0])

    def renew_leases(self, skill: str, pass_id: str) -> int:
        """Extend the pass's leases to scoring.lease_seconds from now; return the leases renewed."""
        return int(self.conn.execute("SELECT ctxgraph.renew_scoring_leases(%s, %s)", (skill, pass_id)).fetchone()[0])

    def lease_seconds(self) -> float:
        """How long a lease lasts (the parameter scoring.lease_seconds)."""
        return float(self.conn.execute("SELECT ctxgraph.param('scoring.lease_seconds')").fetchone()[0])

    def scoring_candidates(self, skill: str, run_id: str, rescore: Sequence[str] = ()) -> list[ClaimedRow]:
        """The run's rows a pass would score (unscored, or stamped for a rescore reason), unleased.

        Raises psycopg.errors.NoDataFound for an unknown run, InvalidParameterValue for an unknown reason.
        """
        rows = self.conn.execute(
            "SELECT retrieval_id, rule_id, attempt_id, attempt_number, retrieved_at, tip_id, tip_body, stamped"
            "  FROM ctxgraph.scoring_candidates(%s, %s, %s::text[])",
            (skill, run_id, list(rescore)),
        ).fetchall()
        return [ClaimedRow(row[0], run_id, *row[1:]) for row in rows]

    def claim_batch(self, skill: str, run_id: str, pass_id: str, limit: int, exclude: Sequence[int],
                    rescore: Sequence[str] = ()) -> list[ClaimedRow]:
        """Lease up to ``limit`` candidates no live pass holds to this pass; no retrieval row is locked.

        ``exclude`` keeps this pass from claiming rows it already tried and left unscored.
        """
        rows = self.conn.execute(
            "SELECT retrieval_id, rule_id, attempt_id, attempt_number, retrieved_at, tip_id, tip_body, stamped"
            "  FROM ctxgraph.claim_scoring_batch(%s, %s, %s, %s, %s::bigint[], %s::text[])",
            (skill, run_id, pass_id, limit, list(exclude), list(rescore)),
        ).fetchall()
        return [ClaimedRow(row[0], run_id, *row[1:]) for row in rows]

    def write_scores(self, skill: str, pass_id: str, scores: Sequence[RowScore]) -> dict[int, tuple[str, str | None]]:
        """Write a group of results back in one statement; return each row's outcome and retry reason.

        Outcomes (ctxgraph.write_scoring_results): stamped, left_unscored, kept (a re-score that was not
        final), already_scored, not_leased, busy (a writer held the row or a lock the write needs:
        write it again shortly). The reason is the status that was not final, if one was not.
        """
        if not scores:
            return {}
        payload = [
            {
                "retrieval_id": s.retrieval_id, "llm": s.llm, "emb": s.emb,
                "follow_probability": s.follow_probability, "llm_status": s.llm_status,
                "emb_status": s.emb_status, "judge_model": s.judge_model, "prompt_sha256": s.prompt_sha256,
                "embed_model": s.embed_model, "embed_mode": s.embed_mode, "script_sha256": s.script_sha256,
                "signal_status": s.signal_status, "calibration_id": s.calibration_id,
                "signal_version": s.signal_version, "follow_evidence": s.follow_evidence,
            }
            for s in scores
        ]
        rows = self.conn.execute(
            "SELECT retrieval_id, outcome, retry_reason FROM ctxgraph.write_scoring_results(%s, %s, %s)",
            (skill, pass_id, Jsonb(payload)),
        ).fetchall()
        return {int(rid): (str(outcome), reason) for rid, outcome, reason in rows}

    def tip_vectors(self, skill: str, tip_ids: Iterable[int]) -> dict[int, np.ndarray]:
        """Return the stored embeddings of these tips (tips without one are absent)."""
        rows = self.conn.execute(
            "SELECT id, embedding FROM ctxgraph.tips"
            " WHERE skill = %s AND id = ANY (%s::bigint[]) AND embedding IS NOT NULL",
            (skill, sorted(set(tip_ids))),
        ).fetchall()
        return {int(tip_id): np.asarray(vec, dtype=np.float32) for tip_id, vec in rows}

    def save_tip_vectors(self, skill: str, vectors: Mapping[int, np.ndarray]) -> int:
        """Fill tips.embedding where it is still NULL, in one statement; return rows written."""
        if not vectors:
            return 0
        ids = list(vectors)
        literals = [_vector_literal(vectors[i]) for i in ids]
        cur = self.conn.execute(
            """
            UPDATE ctxgraph.tips AS t SET embedding = v.embedding::vector
              FROM unnest(%s::bigint[], %s::text[]) AS v (id, embedding)
             WHERE t.skill = %s AND t.id = v.id AND t.embedding IS NULL
            """,
            (ids, literals, skill),
        )
        return cur.rowcount

    def chunk_vectors(self, model: str, digests: Iterable[str]) -> dict[str, np.ndarray]:
        """Return the cached vectors of these chunk hashes for this model id (absent when not cached)."""
        wanted = sorted(set(digests))
        if not wanted:
            return {}
        rows = self.conn.execute(
            "SELECT chunk_sha256, embedding FROM ctxgraph.chunk_embeddings"
            " WHERE model = %s AND chunk_sha256 = ANY (%s::text[])",
            (model, wanted),
        ).fetchall()
        return {str(digest): np.asarray(vec, dtype=np.float32) for digest, vec in rows}

    def save_chunk_vectors(self, model: str, vectors: Mapping[str, np.ndarray]) -> int:
        """Cache chunk vectors by (model, chunk hash) in one statement; a key already cached is left as is."""
        if not vectors:
            return 0
        digests = list(vectors)
        cur = self.conn.execute(
            """
            INSERT INTO ctxgraph.chunk_embeddings (model, chunk_sha256, embedding)
            SELECT %s, v.digest, v.embedding::vector FROM unnest(%s::text[], %s::text[]) AS v (digest, embedding)
            ON CONFLICT (model, chunk_sha256) DO NOTHING
            """,
            (model, digests, [_vector_literal(vectors[d]) for d in digests]),
        )
        return cur.rowcount

    def cached_verdicts(self, keys: Iterable[VerdictKey]) -> dict[VerdictKey, CachedVerdict]:
        """Return the cached judge answers for these keys."""
        wanted = list(set(keys))
        if not wanted:
            return {}
        rows = self.conn.execute(
            """
            SELECT v.tip_sha256, v.script_sha256, v.model, v.prompt_sha256,
                   v.followed, v.reasoning, v.error, v.response_format
              FROM ctxgraph.follow_verdicts AS v
              JOIN unnest(%s::text[], %s::text[], %s::text[], %s::text[]) AS k (tip, script, model, prompt)
                ON v.tip_sha256 = k.tip AND v.script_sha256 = k.script
               AND v.model = k.model AND v.prompt_sha256 = k.prompt
            """,
            (
                [k.tip_sha256 for k in wanted],
                [k.script_sha256 for k in wanted],
                [k.model for k in wanted],
                [k.prompt_sha256 for k in wanted],
            ),
        ).fetchall()
        return {VerdictKey(*row[:4]): CachedVerdict(*row[4:]) for row in rows}

    def save_verdicts(self, verdicts: Mapping[VerdictKey, CachedVerdict]) -> int:
        """Cache judge answers (verdicts and permanent failures) in one statement; an answer already
        cached stays, except a legacy 'http_error' row, which the new answer replaces."""
        if not verdicts:
            return 0
        keys = list(verdicts)
        cur = self.conn.execute(
            """
            INSERT INTO ctxgraph.follow_verdicts
                   (tip_sha256, script_sha256, model, prompt_sha256, followed, reasoning, error, response_format)
            SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::boolean[], %s::text[],
                                 %s::text[], %s::text[])
            ON CONFLICT (tip_sha256, script_sha256, model, prompt_sha256) DO UPDATE
               SET followed = excluded.followed, reasoning = excluded.reasoning, error = excluded.error,
                   response_format = excluded.response_format, created_at = now()
             -- 'http_error' was cached by versions that took 401/403/404 for answers: not an answer.
             WHERE follow_verdicts.error = 'http_error'
            """,
            (
                [k.tip_sha256 for k in keys],
                [k.script_sha256 for k in keys],
                [k.model for k in keys],
                [k.prompt_sha256 for k in keys],
                [verdicts[k].followed for k in keys],
                [verdicts[k].reasoning for k in keys],
                [verdicts[k].error for k in keys],
                [verdicts[k].response_format for k in keys],
            ),
        )
        return cur.rowcount

    # -- ctxgraph load: tips are plain rows (the documented INSERT), reused when already in memory ------
    def tip_id_for(self, skill: str, rule_id: str | None, body: str) -> int:
        """Return the id of the skill's tip with this rule and body, inserting it when it is new."""
        row = self.conn.execute(
            "SELECT id FROM ctxgraph.tips WHERE skill = %s AND body = %s AND rule_id IS NOT DISTINCT FROM %s"
            " ORDER BY id LIMIT 1",
            (skill, body, rule_id),
        ).fetchone()
        if row is None:
            row = self.conn.execute(
                "INSERT INTO ctxgraph.tips (skill, rule_id, body) VALUES (%s, %s, %s) RETURNING id",
                (skill, rule_id, body),
            ).fetchone()
        return int(row[0])

    def replan(self) -> None:
        """Drop this session's cached plans (DISCARD PLANS): every statement is planned again, on the
        tables as they are now, the next time it runs."""
        self.conn.execute("DISCARD PLANS")

    def analyze_recorded_empty(self, skill: str) -> list[str]:
        """ANALYZE the skill's tables whose statistics record no rows over pages that exist, among
        those this role may analyse (it owns them); return their names. Inside a transaction,
        ANALYZE counts the transaction's own rows, which no other analyse or vacuum sees."""
        tables = self.conn.execute(
            "SELECT n.nspname, c.relname FROM pg_catalog.pg_class AS c"
            "  JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relkind = 'r' AND c.reltuples = 0 AND c.relpages > 0"
            "   AND pg_catalog.pg_has_role(c.relowner, 'USAGE')"
            " ORDER BY c.relname", (skill,)).fetchall()
        if tables:
            self.conn.execute(sql.SQL("ANALYZE {}").format(
                sql.SQL(", ").join(sql.Identifier(schema, name) for schema, name in tables)))
        return [f"{schema}.{name}" for schema, name in tables]

    def set_run_ended(self, skill: str, run_id: str, ended_at: datetime) -> int:
        """Set a run's end (the log's run_end line); return rows updated (0 for a run never started)."""
        return self.conn.execute("UPDATE ctxgraph.runs SET ended_at = %s WHERE skill = %s AND id = %s",
                                 (ended_at, skill, run_id)).rowcount

    # -- ctxgraph evaluate: gold labels to retrieval ids -------------------------------------------------
    def signal_examples(self, skill: str, signal_version: str,
                        retrieval_ids: Sequence[int] | None = None
                        ) -> list[tuple[int, str, int, dict, float | None, bool | None]]:
        """(retrieval id, rule, tip id, stored lexical features, cosine, judge verdict) of the skill's
        retrievals whose follow evidence has this signal version; all of them, or only ``retrieval_ids``."""
        rows = self.conn.execute(
            """
            SELECT r.id, r.rule_id, r.tip_id, s.follow_evidence -> 'features',
                   ctxgraph.known_cosine(r.tip_followed_emb), r.tip_followed_llm
              FROM ctxgraph.retrieval_scores AS s
              JOIN ctxgraph.tip_retrievals AS r ON r.skill = s.skill AND r.id = s.retrieval_id
             WHERE s.skill = %s AND s.signal_version = %s AND s.follow_evidence ? 'features'
               AND (%s::bigint[] IS NULL OR r.id = ANY (%s::bigint[]))
             ORDER BY r.id
            """,
            (skill, signal_version, retrieval_ids, retrieval_ids),
        ).fetchall()
        return [(int(a), b, int(t), c, d, e) for a, b, t, c, d, e in rows]

    def peer_feature_sums(self, skill: str, signal_version: str, tip_ids: Sequence[int],
                          features: Sequence[str], exclude_ids: Sequence[int] = ()
                          ) -> dict[int, tuple[int, tuple[float, ...]]]:
        """Per tip: how many of its retrievals carry follow evidence of this signal version (one
        per retrieval, those in ``exclude_ids`` left out), and the sum of each named feature over
        them: what the follow signal contrasts a new script with (calibration.PeerSums)."""
        rows = self.conn.execute(
            """
            SELECT r.tip_id, n.position, count(*),
                   coalesce(sum((s.follow_evidence -> 'features' ->> n.name)::double precision), 0)
              FROM ctxgraph.tip_retrievals AS r
              JOIN ctxgraph.retrieval_scores AS s ON s.skill = r.skill AND s.retrieval_id = r.id
             CROSS JOIN unnest(%(names)s::text[]) WITH ORDINALITY AS n (name, position)
             WHERE r.skill = %(skill)s AND r.tip_id = ANY (%(tips)s::bigint[])
               AND s.signal_version = %(version)s AND s.follow_evidence ? 'features'
               AND r.id <> ALL (%(exclude)s::bigint[])
             GROUP BY r.tip_id, n.position
            """,
            {"names": list(features), "skill": skill, "tips": list(tip_ids), "version": signal_version,
             "exclude": list(exclude_ids)},
        ).fetchall()
        out: dict[int, tuple[int, list[float]]] = {}
        for tip_id, position, n, total in rows:
            count, sums = out.setdefault(int(tip_id), (int(n), [0.0] * len(features)))
            sums[int(position) - 1] = float(total)
        return {tip: (count, tuple(sums)) for tip, (count, sums) in out.items()}

    def resolve_labels(self, skill: str, labels: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
        """Return (label line, retrieval id) for every retrieval a label names, in one statement.

        A label names its retrieval by ``retrieval_id``, or by ``run_id, rule_id, attempt_number`` and
        the tip (``tip_id`` or ``tip_body``); a label may match several retrievals or none.
        """
        rows = self.conn.execute(
            """
            SELECT l.line, r.id
              FROM unnest(%(line)s::int[], %(rid)s::bigint[], %(run)s::text[], %(rule)s::text[], %(num)s::int[],
                          %(tip)s::bigint[], %(body)s::text[]) AS l (line, rid, run_id, rule_id, num, tip_id, body)
              JOIN ctxgraph.tip_retrievals AS r ON r.skill = %(skill)s
              LEFT JOIN ctxgraph.attempts AS a ON a.skill = r.skill AND a.id = r.attempt_id
              LEFT JOIN ctxgraph.tips AS t ON t.skill = r.skill AND t.id = r.tip_id
             WHERE (l.rid IS NOT NULL AND r.id = l.rid)
                OR (l.rid IS NULL AND r.run_id = l.run_id AND r.rule_id = l.rule_id AND a.attempt_number = l.num
                    AND (r.tip_id = l.tip_id OR t.body = l.body))
            """,
            {
                "skill": skill,
                "line": [label["line"] for label in labels],
                "rid": [label.get("retrieval_id") for label in labels],
                "run": [label.get("run_id") for label in labels],
                "rule": [label.get("rule_id") for label in labels],
                "num": [label.get("attempt_number") for label in labels],
                "tip": [label.get("tip_id") for label in labels],
                "body": [label.get("tip_body") for label in labels],
            },
        ).fetchall()
        return [(int(line), int(retrieval_id)) for line, retrieval_id in rows]


class SimulatorStore:
    """``ctxgraph simulate``'s SQL: its throwaway database, the tips and follow signals it writes, and its reads.

    The history itself goes through :class:`Client` (the agent's write path); only what an agent or the
    scoring pass would write by other means is here: tips (the documented plain INSERT, batched) and the
    three DEF-27 columns (one batched UPDATE, as the scoring pass writes them).
    """

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn

    # -- the throwaway database (on an autocommit connection to another database of the server) ---------
    @staticmethod
    def database_exists(admin: psycopg.Connection, name: str) -> bool:
        return admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None

    @staticmethod
    def create_database(admin: psycopg.Connection, name: str, template: str | None = None) -> None:
        if template is None:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        else:
            admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name),
                                                                           sql.Identifier(template)))

    @staticmethod
    def drop_database(admin: psycopg.Connection, name: str) -> None:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    # -- what the deployed schema offers ----------------------------------------------------------------
    def last_change(self) -> str | None:
        """The last sqitch change deployed in this database (None without a sqitch registry)."""
        if self.conn.execute("SELECT to_regclass('sqitch.changes')").fetchone()[0] is None:
            return None
        row = self.conn.execute(
            "SELECT change FROM sqitch.changes WHERE project = 'ctxgraph' ORDER BY committed_at DESC LIMIT 1"
        ).fetchone()
        return str(row[0]) if row else None

    def has_relation(self, name: str) -> bool:
        return self.conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()[0]

    def has_function(self, signature: str) -> bool:
        return self.conn.execute("SELECT to_regprocedure(%s) IS NOT NULL", (signature,)).fetchone()[0]

    def has_column(self, schema: str, relation: str, column: str) -> bool:
        return self.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM information_schema.columns"
            " WHERE table_schema = %s AND table_name = %s AND column_name = %s)",
            (schema, relation, column),
        ).fetchone()[0]

    # -- writes ---------------------------------------------------------------------------------------
    def set_parameters(self, values: Mapping[str, float]) -> list[str]:
        """UPDATE ctxgraph.parameters in one statement; return the names that matched no row (unknown)."""
        if not values:
            return []
        names = list(values)
        updated = {row[0] for row in self.conn.execute(
            "UPDATE ctxgraph.parameters AS p SET value = v.value"
            " FROM unnest(%s::text[], %s::double precision[]) AS v (name, value)"
            " WHERE p.name = v.name RETURNING p.name",
            (names, [float(values[n]) for n in names]),
        )}
        return [n for n in names if n not in updated]

    def insert_tips(self, skill: str, rule_ids: Sequence[str], bodies: Sequence[str],
                    created_at: datetime) -> list[int]:
        """Insert tips (the documented plain INSERT, one statement); return their ids in input order."""
        rows = self.conn.execute(
            """
            WITH new AS (
                INSERT INTO ctxgraph.tips (skill, rule_id, body, created_at)
                SELECT %s, v.rule_id, v.body, %s
                  FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS v (rule_id, body, ord)
                 ORDER BY v.ord
                RETURNING id, rule_id, body
            )
            SELECT v.ord, new.id
              FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS v (rule_id, body, ord)
              JOIN new ON new.rule_id = v.rule_id AND new.body = v.body
             ORDER BY v.ord
            """,
            (skill, created_at, list(rule_ids), list(bodies), list(rule_ids), list(bodies)),
        ).fetchall()
        if len(rows) != len(bodies):
            raise DatabaseError("insert_tips: tip bodies must be unique within a rule")
        return [int(tip_id) for _, tip_id in rows]

    def insert_general_tips(self, skill: str, bodies: Sequence[str], created_at: datetime) -> list[int]:
        """Insert tips of no rule (rule_id NULL) with the documented plain INSERT; return their ids in input
        order (insert_tips matches what it inserted by rule_id, which these lack)."""
        rows = self.conn.execute(
            """
            WITH new AS (
                INSERT INTO ctxgraph.tips (skill, rule_id, body, created_at)
                SELECT %s, NULL, v.body, %s
                  FROM unnest(%s::text[]) WITH ORDINALITY AS v (body, ord)
                 ORDER BY v.ord
                RETURNING id, body
            )
            SELECT v.ord, new.id
              FROM unnest(%s::text[]) WITH ORDINALITY AS v (body, ord)
              JOIN new ON new.body = v.body
             ORDER BY v.ord
            """,
            (skill, created_at, list(bodies), list(bodies)),
        ).fetchall()
        if len(rows) != len(bodies):
            raise DatabaseError("insert_general_tips: tip bodies must be unique")
        return [int(tip_id) for _, tip_id in rows]

    def refresh_tip_effects_released(self, skill: str, as_of: datetime) -> None:
        """The PL/pgSQL fit of a schema deployed to @v0.6.0 or earlier (ctxgraph.refresh_tip_effects)."""
        self.conn.execute("SELECT ctxgraph.refresh_tip_effects(%s, %s)", (skill, as_of))

    def write_follow_signals(self, skill: str, retrieval_ids: Sequence[int], llm: Sequence[bool | None],
                             emb: Sequence[float | None], computed_at: datetime) -> int:
        """Write the three DEF-27 columns of a batch of retrievals in one UPDATE, as the scoring pass does."""
        if not retrieval_ids:
            return 0
        return self.conn.execute(
            """
            UPDATE ctxgraph.tip_retrievals AS r
               SET tip_followed_llm = v.llm, tip_followed_emb = v.emb, tip_followed_computed_at = %s
              FROM unnest(%s::bigint[], %s::boolean[], %s::double precision[]) AS v (id, llm, emb)
             WHERE r.skill = %s AND r.id = v.id
            """,
            (computed_at, [int(i) for i in retrieval_ids], list(llm), list(emb), skill),
        ).rowcount

    # -- reads ----------------------------------------------------------------------------------------
    def tip_utilities(self, skill: str, with_effect_column: bool) -> list[Row]:
        """Every tip's row of <skill>.tip_hit_rates (tip_id, scored, outcome_hit_rate, hit_rate[, effect])."""
        columns = [sql.Identifier(c) for c in ("tip_id", "scored", "outcome_hit_rate", "hit_rate")]
        if with_effect_column:
            columns.append(sql.Identifier("effect"))
        query = sql.SQL("SELECT {} FROM {} ORDER BY tip_id").format(
            sql.SQL(", ").join(columns), sql.Identifier(skill, "tip_hit_rates"))
        with self.conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(query).fetchall()

    def tip_effects(self, skill: str, with_blame: bool = False) -> list[Row]:
        """ctxgraph.tip_effects rows of a skill (tip_id, effect, bounds, support, method[, misleading_probability])."""
        columns = "tip_id, effect, lower_bound, upper_bound, attempts, method"
        if with_blame:
            columns += ", misleading_probability"
        with self.conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(
                f"SELECT {columns} FROM ctxgraph.tip_effects WHERE skill = %s ORDER BY tip_id", (skill,)).fetchall()


def _vector_literal(vec: np.ndarray) -> str:
    return "[" + ",".join(f"{float(x):.8g}" for x in np.asarray(vec, dtype=np.float32).ravel()) + "]"


# -- the analysts' audit files -------------------------------------------------------------------------
# sql/audit/*.sql are psql scripts. ctxgraph audit runs the same files through this small subset of psql:
#   \if :{?name} / \else / \endif   (is a variable set?), \set name value (defaults), other
#   backslash commands ignored (\echo, \pset); "-- section: key" names the next statement's result;
#   :'name' (psql's quoted interpolation) becomes a bound parameter, never pasted text.
# Anything else psql would interpolate (:name, :"name") or an \if on another condition is refused, so
# a file that psql and ctxgraph would read differently fails loudly instead of running half.

_META = re.compile(r"^\s*\\([A-Za-z]+)\s*(.*?)\s*$")
_IF_SET = re.compile(r"^:\{\?([A-Za-z_][A-Za-z0-9_]*)\}$")
_SET = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\s+(.*))?$")
_QUOTED_VAR = re.compile(r"(?<![:\w]):'([A-Za-z_][A-Za-z0-9_]*)'")
_OTHER_VAR = re.compile(r"(?<![:\w]):(?:\"[^\"]*\"|[A-Za-z_][A-Za-z0-9_]*|\{)")
_SECTION = re.compile(r"^\s*--\s*section:\s*([a-z_]+)\s*$")


class AuditFileError(ValueError):
    """An audit file uses psql features ctxgraph does not reproduce, or a variable it needs is unset."""


@dataclass(frozen=True)
class AuditStatement:
    key: str
    query: str  # with %(name)s placeholders
    params: dict[str, str]


@dataclass(frozen=True)
class AuditResult:
    key: str
    columns: list[str]
    rows: list[tuple[Any, ...]]


def _psql_value(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    return text


def parse_audit_file(name: str, text: str, variables: Mapping[str, str]) -> list[AuditStatement]:
    """Translate one psql audit file into parameterised statements, as psql would run them."""
    values = dict(variables)
    branches: list[bool] = []  # one entry per open \if: is this branch active?
    taken: list[bool] = []
    statements: list[AuditStatement] = []
    key: str | None = None
    buffer: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        where = f"{name}:{number}"
        meta = _META.match(line)
        if meta:
            command, argument = meta.group(1), meta.group(2)
            if command == "if":
                condition = _IF_SET.match(argument)
                if condition is None:
                    raise AuditFileError(f"{where}: only \\if :{{?name}} is supported, not {argument!r}")
                outer = all(branches)
                branches.append(outer and condition.group(1) in values)
                taken.append(branches[-1])
            elif command == "else":
                if not branches:
                    raise AuditFileError(f"{where}: \\else without \\if")
                outer = all(branches[:-1])
                branches[-1] = outer and not taken[-1]
            elif command == "endif":
                if not branches:
                    raise AuditFileError(f"{where}: \\endif without \\if")
                branches.pop()
                taken.pop()
            elif command == "set" and all(branches):
                assignment = _SET.match(argument)
                if assignment is None:
                    raise AuditFileError(f"{where}: cannot read \\set {argument!r}")
                values[assignment.group(1)] = _psql_value(assignment.group(2) or "")
            continue  # \echo, \pset, \qecho ...: presentation for psql only
        if not all(branches):
            continue
        section = _SECTION.match(line)
        if section:
            key = section.group(1)
            continue
        if line.lstrip().startswith("--") or not (buffer or line.strip()):
            continue
        buffer.append(line)
        if line.rstrip().endswith(";"):
            statement = "\n".join(buffer).rstrip().rstrip(";")
            buffer = []
            if key is None:
                raise AuditFileError(f"{where}: a statement without a '-- section: key' line before it")
            statements.append(_bind(where, key, statement, values))
            key = None
    if branches:
        raise AuditFileError(f"{name}: \\if without \\endif")
    if buffer:
        raise AuditFileError(f"{name}: the last statement has no closing ';'")
    return statements


def _bind(where: str, key: str, statement: str, values: Mapping[str, str]) -> AuditStatement:
    other = _OTHER_VAR.search(_QUOTED_VAR.sub("", statement))
    if other:
        raise AuditFileError(f"{where}: use :'name' for psql variables, not {other.group(0)!r}")
    params: dict[str, str] = {}

    def placeholder(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise AuditFileError(f"{where}: the psql variable {name!r} is not set (psql -v {name}=...)")
        params[name] = values[name]
        return f"%({name})s"

    query = _QUOTED_VAR.sub(placeholder, statement.replace("%", "%%"))
    return AuditStatement(key, query, params)


def run_audit_file(conn: psycopg.Connection, name: str, text: str,
                   variables: Mapping[str, str]) -> list[AuditResult]:
    """Run one audit file's statements with its psql variables bound as parameters; return each result."""
    results = []
    for statement in parse_audit_file(name, text, variables):
        cur = conn.execute(statement.query, statement.params)
        columns = [d.name for d in cur.description or []]
        results.append(AuditResult(statement.key, columns, list(cur.fetchall())))
    return results
