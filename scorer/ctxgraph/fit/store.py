"""The fit's statements: reading the evidence, reading the fit's state, writing a fit.

Reading: every scored retrieval of the skill up to ``as_of`` comes out of ``ctxgraph.fit_evidence``
in one ``COPY ... (FORMAT binary)`` whose columns are all fixed-width numbers, parsed into column
arrays by :func:`numpy.frombuffer` while it arrives, not a Python object per row: the rule and the
run of a row travel as codes into the skill's rule and run lists, a NULL as NaN or -1.
``ctxgraph.fit_snapshot`` gives those lists, the tips and their evidence versions, the attempts
that broke the system, the evidence fingerprint and the parameters, in the same REPEATABLE READ
transaction as the rows: the stamp describes exactly the evidence the fit saw.

Writing: COPY the rows into the session's staging table, then ``ctxgraph.write_tip_fit``, in one
transaction: the skill's rows of ``ctxgraph.tip_effects`` are replaced whole or not at all, and
``ctxgraph.tip_effect_fits`` records the evidence fingerprint and the parameters the fit read.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np
import psycopg
from psycopg import sql

from ctxgraph.fit.evidence import Evidence, PreviousFit

if TYPE_CHECKING:
    from ctxgraph.fit import SkillFit

__all__ = ["fit_parameters", "read_evidence", "read_fit_state", "write_fit"]

# One row of the COPY: a field count, then (length, value) per column, big-endian.
_EVIDENCE_COLUMNS = (
    ("tip_id", ">i8"),
    ("attempt_key", ">i8"),
    ("rule", ">i4"),
    ("run", ">i4"),
    ("follow_weight", ">f8"),
    ("credit", ">f8"),
    ("source", ">i2"),
    ("followed", ">i2"),  # -1 NULL, 0 ignored, 1 followed
    ("follow_probability", ">f8"),  # NaN for NULL
    ("cosine", ">f8"),  # NaN for NULL
)
_ROW_DTYPE = np.dtype(
    [("fields", ">i2")] + [item for name, kind in _EVIDENCE_COLUMNS for item in ((f"{name}_len", ">i4"), (name, kind))]
)
_HEADER = b"PGCOPY\n\xff\r\n\x00"


class _RowStream:
    """Parses a binary COPY of the fit's rows while it arrives: whole rows are moved into column
    arrays every few MB, so the stream's bytes are never all held at once (at 10M rows they are
    0.9 GB, and a joined copy of them as much again)."""

    BATCH = 64 << 20

    def __init__(self) -> None:
        self.pending = bytearray()
        self.started = False
        self.parts: list[np.ndarray] = []

    def feed(self, chunk: bytes | memoryview) -> None:
        self.pending += chunk
        if len(self.pending) >= self.BATCH:
            self._drain(final=False)

    def _drain(self, final: bool) -> None:
        data = self.pending
        start = 0
        if not self.started:
            if len(data) < len(_HEADER) + 8:
                return
            if not bytes(data[: len(_HEADER)]) == _HEADER:
                raise ValueError("not a PostgreSQL binary COPY stream")
            flags_end = len(_HEADER) + 4
            start = flags_end + 4 + int.from_bytes(data[flags_end : flags_end + 4], "big")
            self.started = True
        end = len(data)
        if final:
            if bytes(data[-2:]) != b"\xff\xff":
                raise ValueError("binary COPY stream without its trailer")
            end -= 2
        whole = start + (end - start) // _ROW_DTYPE.itemsize * _ROW_DTYPE.itemsize
        if final and whole != end:
            raise ValueError("binary COPY rows are not of the expected fixed width (a NULL where none may be?)")
        if whole > start:
            rows = np.frombuffer(bytes(data[start:whole]), dtype=_ROW_DTYPE)
            if np.any(rows["fields"] != len(_EVIDENCE_COLUMNS)):
                raise ValueError("binary COPY rows with an unexpected number of columns")
            self.parts.append(_columns(rows))
        self.pending = bytearray(data[whole:]) if not final else bytearray()

    def finish(self) -> dict[str, np.ndarray]:
        self._drain(final=True)
        if not self.parts:
            return {name: np.zeros(0, dtype=_NATIVE[name]) for name, _ in _EVIDENCE_COLUMNS}
        # Column by column, each batch's piece let go once copied: at 10M rows the columns are 0.6 GB,
        # and holding the pieces of all of them beside the joined ones would double that.
        columns = {}
        for name, _ in _EVIDENCE_COLUMNS:
            columns[name] = np.concatenate([part.pop(name) for part in self.parts])
        self.parts = []
        return columns


_NATIVE = {"tip_id": np.int64, "attempt_key": np.int64, "rule": np.int32, "run": np.int32, "follow_weight": np.float64,
           "credit": np.float64, "source": np.int8, "followed": np.int8, "follow_probability": np.float64,
           "cosine": np.float64}


def _columns(rows: np.ndarray) -> dict[str, np.ndarray]:
    return {name: rows[name].astype(_NATIVE[name]) for name, _ in _EVIDENCE_COLUMNS}


def read_evidence(conn: psycopg.Connection, skill: str, as_of: datetime, *, previous: bool = False) -> Evidence:
    """Read everything a fit of ``skill`` as of ``as_of`` needs, in one REPEATABLE READ snapshot.

    With ``previous`` also the stored fit an incremental fit starts from (``ctxgraph.fit_previous``),
    in the same snapshot: the tips it names as changed are exactly those whose rows differ.

    Through ``ctxgraph.fit_snapshot`` and ``ctxgraph.fit_evidence`` (owner-run: the fit's roles
    read no log table themselves). On an idle connection the read is a REPEATABLE READ transaction
    of its own; inside the caller's transaction it reads that transaction's snapshot(s).
    """
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    isolation = conn.isolation_level
    if idle and not conn.autocommit:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    try:
        with conn.transaction(), conn.cursor() as cur:
            if idle and conn.autocommit:
                cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cur.execute(
                "SELECT rules, runs, tips, tip_versions, harmful_attempts, evidence_version, parameters"
                " FROM ctxgraph.fit_snapshot(%s)",
                (skill,),
            )
            rules, runs, tips, versions, harmful, version, parameters = cur.fetchone()
            stored = None
            if previous:
                cur.execute(
                    "SELECT fit_as_of, parameters, fit_parameters, tip_id, effect, std_error, method,"
                    " misleading_probability, changed_tips FROM ctxgraph.fit_previous(%s, %s)",
                    (skill, as_of),
                )
                row = cur.fetchone()
                if row is not None:
                    stored = _previous_fit(row)
            statement = sql.SQL("COPY (SELECT * FROM ctxgraph.fit_evidence({}, {})) TO STDOUT (FORMAT binary)").format(
                sql.Literal(skill), sql.Literal(as_of)
            )
            stream = _RowStream()
            with cur.copy(statement) as copy:
                for chunk in copy:
                    stream.feed(chunk)
            rows = stream.finish()
    finally:
        if idle and not conn.autocommit:
            conn.isolation_level = isolation
    if rows["rule"].size and (np.any(rows["rule"] < 0) or np.any(rows["run"] < 0)):
        raise RuntimeError(
            f"ctxgraph: {skill}'s maintained levels miss a rule or run of its log: run SELECT ctxgraph.refresh_tip_stats()"
        )
    skill_tips = np.array(tips, dtype=np.int64)
    return Evidence(
        skill=skill,
        as_of=as_of,
        rules=list(rules),
        runs=list(runs),
        tip_id=rows["tip_id"],
        attempt_key=rows["attempt_key"],
        rule=rows["rule"] - 1,
        run=rows["run"] - 1,
        follow_weight=rows["follow_weight"],
        credit=rows["credit"],
        source=rows["source"],
        followed=rows["followed"],
        follow_probability=rows["follow_probability"],
        cosine=rows["cosine"],
        harmful_attempts=np.array(harmful, dtype=np.int64),
        skill_tips=skill_tips,
        evidence_version=Decimal(version),
        parameters={str(k): float(v) for k, v in parameters.items()},
        tip_versions=np.array(versions, dtype=np.int64),
        previous=stored,
    )


def _floats(values: list) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def _previous_fit(row: tuple) -> PreviousFit:
    fit_as_of, parameters, summary, tips, effect, std_error, method, misleading, changed = row
    return PreviousFit(
        as_of=fit_as_of,
        parameters={str(k): float(v) for k, v in (parameters or {}).items()},
        summary=dict(summary or {}),
        tip_id=np.array(tips, dtype=np.int64),
        effect=_floats(effect),
        std_error=_floats(std_error),
        method=np.array(method, dtype=object),
        misleading_probability=_floats(misleading),
        changed=np.array(changed, dtype=np.int64),
    )


def read_fit_state(conn: psycopg.Connection, skill: str, as_of: datetime | None) -> tuple:
    """``ctxgraph.fit_state(skill, as_of)`` (as_of: the database's now() when None), with the instant asked."""
    with conn.transaction(), conn.cursor() as cur:
        if as_of is None:
            cur.execute("SELECT now()")
            as_of = cur.fetchone()[0]
        cur.execute("SELECT fitted_at, fit_as_of, current, parameters_changed, tips_changed, attempts_after, refit"
                    " FROM ctxgraph.fit_state(%s, %s)", (skill, as_of))
        return (as_of, *cur.fetchone())


_FIT_COLUMNS = ("tip_id", "effect", "std_error", "lower_bound", "upper_bound", "attempts", "followed_attempts",
            "co_followed_tips", "component_tips", "method", "misleading_probability", "evidence_version")


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(float(value)) else None
    return value


def fit_parameters(fit: "SkillFit") -> dict[str, Any]:
    """What every row of the fit records in ``tip_effects.parameters``: the effects' parameters and
    iterations, and the blame's parameters and summary."""
    return _json_safe({**fit.effect_parameters, **fit.blame_summary})


def _nullable(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def write_fit(conn: psycopg.Connection, fit: "SkillFit") -> int:
    """Write ``fit`` in one transaction (the connection must not be inside one); returns the tips with evidence."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT ctxgraph.tip_fit_staging()")
        table = cur.fetchone()[0]
        columns = ", ".join(_FIT_COLUMNS)
        with cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for i in range(fit.tip_id.size):
                evidence = fit.method[i] != "no_evidence"
                copy.write_row((
                    int(fit.tip_id[i]),
                    _nullable(fit.effect[i]),
                    _nullable(fit.std_error[i]),
                    _nullable(fit.lower_bound[i]),
                    _nullable(fit.upper_bound[i]),
                    int(fit.attempts[i]),
                    float(fit.followed_attempts[i]),
                    int(fit.co_followed_tips[i]) if evidence else None,
                    int(fit.component_tips[i]) if evidence else None,
                    str(fit.method[i]),
                    _nullable(fit.misleading_probability[i]),
                    int(fit.tip_versions[i]),
                ))
        cur.execute(
            "SELECT ctxgraph.write_tip_fit(%s, %s, %s, %s::jsonb, %s::jsonb)",
            (fit.skill, fit.as_of, fit.evidence_version, json.dumps(fit.parameters, sort_keys=True),
             json.dumps(fit_parameters(fit), sort_keys=True)),
        )
        return int(cur.fetchone()[0])
