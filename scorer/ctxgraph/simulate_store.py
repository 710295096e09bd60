"""``ctxgraph simulate``'s SQL: :class:`SimulatorStore`, beside :mod:`ctxgraph.simulate`, which it serves.

Its throwaway database (created, cloned from a template, dropped), what the deployed schema offers,
the tips and follow signals it writes where an agent or the scoring pass would write them by other
means, and the reads it measures; the history itself goes through :class:`ctxgraph.client.Client`.

Only ctxgraph's SQL modules execute statements: :mod:`ctxgraph.client` (the public :class:`Client`) and
the stores, each a module named ``*_store.py`` beside the code it serves (``connection_store``,
``scoring_store``, ``simulate_store``, ``audit_store``; the fit's is ``ctxgraph.fit.store``).
tests/test_client.py holds their list; no other module calls ``execute``, ``executemany``, ``copy``
or ``cursor``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from ctxgraph.connection_store import DatabaseError

__all__ = ["SimulatorStore"]

Row = dict[str, Any]


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
