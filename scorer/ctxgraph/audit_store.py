"""``ctxgraph audit``'s SQL: :func:`run_audit_file` runs one analysts' audit file, its psql variables
bound as parameters (the file is read by :mod:`ctxgraph.audit_file`).

Only ctxgraph's SQL modules execute statements: :mod:`ctxgraph.client` (the public :class:`Client`) and
the stores, each a module named ``*_store.py`` beside the code it serves (``connection_store``,
``scoring_store``, ``simulate_store``, ``audit_store``; the fit's is ``ctxgraph.fit.store``).
tests/test_client.py holds their list; no other module calls ``execute``, ``executemany``, ``copy``
or ``cursor``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psycopg

from ctxgraph.audit_file import parse_audit_file

__all__ = ["AuditResult", "run_audit_file"]


@dataclass(frozen=True)
class AuditResult:
    key: str
    columns: list[str]
    rows: list[tuple[Any, ...]]


def run_audit_file(conn: psycopg.Connection, name: str, text: str,
                   variables: Mapping[str, str]) -> list[AuditResult]:
    """Run one audit file's statements with its psql variables bound as parameters; return each result."""
    results = []
    for statement in parse_audit_file(name, text, variables):
        cur = conn.execute(statement.query, statement.params)
        columns = [d.name for d in cur.description or []]
        results.append(AuditResult(statement.key, columns, list(cur.fetchall())))
    return results
