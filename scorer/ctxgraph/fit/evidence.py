"""The evidence a fit reads, in one consistent snapshot and in bulk.

Every scored retrieval of the skill up to ``as_of`` comes out of ``ctxgraph.fit_evidence`` in one
``COPY ... (FORMAT binary)`` whose columns are all fixed-width numbers, so the whole stream is read
by one :func:`numpy.frombuffer` instead of a Python object per row: the rule and the run of a row
travel as codes into the skill's rule and run lists, a NULL as NaN or -1. ``ctxgraph.fit_snapshot``
gives those lists, the tips and their evidence versions, the attempts that broke the system (a
per-attempt figure, from the maintained levels), the evidence fingerprint and the parameters, in
the same REPEATABLE READ transaction as the rows: the stamp describes exactly the evidence the fit
saw.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

import numpy as np
import psycopg
from psycopg import sql

from ctxgraph.fit.groups import Units, to_units

__all__ = ["SOURCE_CODES", "Evidence", "read_evidence", "rows_from_copy"]

# follow_source as a small integer: the blame model reads a verdict's reliability by its source.
SOURCE_CODES = {"none": 0, "judge": 1, "embedding": 2, "signal": 3}

# One row of the COPY: a field count, then (length, value) per column, big-endian.
_COLUMNS = (
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
    [("fields", ">i2")] + [item for name, kind in _COLUMNS for item in ((f"{name}_len", ">i4"), (name, kind))]
)
_HEADER = b"PGCOPY\n\xff\r\n\x00"


@dataclass
class Evidence:
    """A skill's scored retrievals up to ``as_of``, as column arrays (one entry per row)."""

    skill: str
    as_of: datetime
    rules: list[str]  # rule code -> rule id, in the database's text order
    runs: list[str]
    tip_id: np.ndarray
    attempt_key: np.ndarray
    rule: np.ndarray
    run: np.ndarray
    follow_weight: np.ndarray
    credit: np.ndarray
    source: np.ndarray
    followed: np.ndarray
    follow_probability: np.ndarray
    cosine: np.ndarray
    harmful_attempts: np.ndarray  # sorted attempt keys that broke the system
    skill_tips: np.ndarray  # every tip of the skill, sorted
    evidence_version: Decimal
    parameters: dict[str, float]
    tip_versions: np.ndarray  # aligned with skill_tips
    _units: Units | None = field(default=None, repr=False)
    _attempts: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def units(self) -> Units:
        """The rows grouped by (tip, attempt), computed once for the effects and the blame."""
        if self._units is None:
            self._units = to_units(self.tip_id, self.attempt_key, self.rule)
        return self._units

    def attempts(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct attempt keys (sorted) and each row's index into them."""
        if self._attempts is None:
            keys, index = np.unique(self.attempt_key, return_inverse=True)
            self._attempts = (keys, index.reshape(-1))
        return self._attempts

    @property
    def rows(self) -> int:
        return int(self.tip_id.shape[0])

    def harmful(self, attempt_keys: np.ndarray) -> np.ndarray:
        """Whether each attempt key broke the system."""
        if self.harmful_attempts.size == 0:
            return np.zeros(attempt_keys.shape, dtype=bool)
        at = np.searchsorted(self.harmful_attempts, attempt_keys)
        at = np.minimum(at, self.harmful_attempts.size - 1)
        return self.harmful_attempts[at] == attempt_keys


def rows_from_copy(data: bytes) -> np.ndarray:
    """The structured rows of a binary COPY of the fit's columns (header and trailer checked)."""
    if not data.startswith(_HEADER):
        raise ValueError("not a PostgreSQL binary COPY stream")
    flags_end = len(_HEADER) + 4
    extension = int.from_bytes(data[flags_end : flags_end + 4], "big")
    start = flags_end + 4 + extension
    if data[-2:] != b"\xff\xff":
        raise ValueError("binary COPY stream without its trailer")
    body = memoryview(data)[start:-2]
    if len(body) % _ROW_DTYPE.itemsize:
        raise ValueError("binary COPY rows are not of the expected fixed width (a NULL where none may be?)")
    rows = np.frombuffer(body, dtype=_ROW_DTYPE)
    if rows.size and (np.any(rows["fields"] != len(_COLUMNS))):
        raise ValueError("binary COPY rows with an unexpected number of columns")
    return rows


def _copy_bytes(cur: psycopg.Cursor, statement: sql.Composable) -> bytes:
    chunks: list[bytes] = []
    with cur.copy(statement) as copy:
        for chunk in copy:
            chunks.append(bytes(chunk))
    return b"".join(chunks)


def read_evidence(conn: psycopg.Connection, skill: str, as_of: datetime) -> Evidence:
    """Read everything a fit of ``skill`` as of ``as_of`` needs, in one REPEATABLE READ snapshot.

    Through ``ctxgraph.fit_snapshot`` and ``ctxgraph.fit_evidence`` (owner-run: the fit's roles
    read no log table themselves). On an idle connection the read is a REPEATABLE READ transaction
    of its own; inside the caller's transaction it reads that transaction's snapshot(s).
    """
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    previous = conn.isolation_level
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
            statement = sql.SQL("COPY (SELECT * FROM ctxgraph.fit_evidence({}, {})) TO STDOUT (FORMAT binary)").format(
                sql.Literal(skill), sql.Literal(as_of)
            )
            rows = rows_from_copy(_copy_bytes(cur, statement))
    finally:
        if idle and not conn.autocommit:
            conn.isolation_level = previous
    if rows.size and (np.any(rows["rule"] < 0) or np.any(rows["run"] < 0)):
        raise RuntimeError(
            f"ctxgraph: {skill}'s maintained levels miss a rule or run of its log: run SELECT ctxgraph.refresh_tip_stats()"
        )
    skill_tips = np.array(tips, dtype=np.int64)
    return Evidence(
        skill=skill,
        as_of=as_of,
        rules=list(rules),
        runs=list(runs),
        tip_id=rows["tip_id"].astype(np.int64),
        attempt_key=rows["attempt_key"].astype(np.int64),
        rule=rows["rule"].astype(np.int64) - 1,
        run=rows["run"].astype(np.int64) - 1,
        follow_weight=rows["follow_weight"].astype(np.float64),
        credit=rows["credit"].astype(np.float64),
        source=rows["source"].astype(np.int8),
        followed=rows["followed"].astype(np.int8),
        follow_probability=rows["follow_probability"].astype(np.float64),
        cosine=rows["cosine"].astype(np.float64),
        harmful_attempts=np.array(harmful, dtype=np.int64),
        skill_tips=skill_tips,
        evidence_version=Decimal(version),
        parameters={str(k): float(v) for k, v in parameters.items()},
        tip_versions=np.array(versions, dtype=np.int64),
    )


