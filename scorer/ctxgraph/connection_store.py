"""What every SQL module shares: the connection, the transaction, the skill check and their errors.

- :func:`connect`: a connection to DATABASE_URL (else the libpq variables) with pgvector registered,
  or :class:`DatabaseError` saying why not.
- :func:`run_in_transaction`: runs a unit of work in one transaction and runs it again when
  PostgreSQL breaks a deadlock by aborting it (40P01); the loader's way to write a file.
- :func:`require_skill`: the skill's grading mode, or :class:`UnknownSkill` (one wording for every
  command).

Only ctxgraph's SQL modules execute statements: :mod:`ctxgraph.client` (the public :class:`Client`) and
the stores, each a module named ``*_store.py`` beside the code it serves (``connection_store``,
``scoring_store``, ``simulate_store``, ``audit_store``; the fit's is ``ctxgraph.fit.store``).
tests/test_client.py holds their list; no other module calls ``execute``, ``executemany``, ``copy``
or ``cursor``.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from typing import TypeVar

import psycopg
from pgvector.psycopg import register_vector
from psycopg import errors, pq

__all__ = [
    "DEADLOCK_BACKOFF",
    "DEADLOCK_RETRIES",
    "DatabaseError",
    "UnknownSkill",
    "connect",
    "require_skill",
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
