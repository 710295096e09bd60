"""The only module that speaks SQL: the scoring pass's reads and batched writes.

Every statement is parameterised; every batch is one statement (``UPDATE ... FROM unnest(...)`` or
``INSERT ... SELECT unnest(...)``), never a round trip per row. The caller owns the connection and
the transactions: :class:`Store` never commits on its own.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

__all__ = [
    "ClaimedRow",
    "DatabaseError",
    "RowScore",
    "Store",
    "VerdictKey",
    "CachedVerdict",
    "connect",
]


class DatabaseError(RuntimeError):
    """The database could not be reached or refused a request; the message says which."""


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


@dataclass(frozen=True)
class RowScore:
    """What the pass writes back for one retrieval. ``stamp`` sets tip_followed_computed_at."""

    retrieval_id: int
    llm: bool | None
    emb: float | None
    stamp: bool
    llm_status: str
    emb_status: str
    judge_model: str | None
    prompt_sha256: str | None
    embed_model: str | None
    embed_mode: str | None
    script_sha256: str | None


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


class Store:
    """The scoring pass's SQL, on a connection the caller owns (and commits)."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn

    def skill_grading(self, skill: str) -> str:
        """Return the skill's grading mode; raise DatabaseError for an unknown skill."""
        row = self.conn.execute("SELECT grading FROM ctxgraph.skills WHERE name = %s", (skill,)).fetchone()
        if row is None:
            known = [r[0] for r in self.conn.execute("SELECT name FROM ctxgraph.skills ORDER BY name")]
            raise DatabaseError(f"unknown skill {skill!r}; registered skills: {', '.join(known) or 'none'}")
        return str(row[0])

    def count_unscored(self, skill: str, run_id: str) -> int:
        """Return how many of the run's retrievals have tip_followed_computed_at NULL."""
        row = self.conn.execute(
            "SELECT count(*) FROM ctxgraph.tip_retrievals"
            " WHERE skill = %s AND run_id = %s AND tip_followed_computed_at IS NULL",
            (skill, run_id),
        ).fetchone()
        return int(row[0]) if row else 0

    def claim_batch(self, skill: str, run_id: str, limit: int, exclude: Sequence[int]) -> list[ClaimedRow]:
        """Lock up to ``limit`` unscored retrievals of the run that no other pass holds.

        ``FOR UPDATE SKIP LOCKED``: a concurrent pass skips rows this transaction holds, so no row is
        scored twice; the locks end with the caller's commit or rollback (a killed pass loses only
        its open batch, which the next pass claims again). ``exclude`` keeps this pass from
        re-claiming rows it already tried and left unstamped (transient failures).
        """
        rows = self.conn.execute(
            """
            SELECT r.id, r.run_id, r.rule_id, r.attempt_id, a.attempt_number, r.retrieved_at, r.tip_id, t.body
              FROM ctxgraph.tip_retrievals AS r
              JOIN ctxgraph.tips AS t ON t.skill = r.skill AND t.id = r.tip_id
              LEFT JOIN ctxgraph.attempts AS a ON a.skill = r.skill AND a.id = r.attempt_id
             WHERE r.skill = %(skill)s AND r.run_id = %(run_id)s
               AND r.tip_followed_computed_at IS NULL
               AND r.id <> ALL (%(exclude)s::bigint[])
             ORDER BY r.id
             LIMIT %(limit)s
               FOR UPDATE OF r SKIP LOCKED
            """,
            {"skill": skill, "run_id": run_id, "exclude": list(exclude), "limit": limit},
        ).fetchall()
        return [ClaimedRow(*row) for row in rows]

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
        """Cache judge answers (verdicts and permanent failures) in one statement."""
        if not verdicts:
            return 0
        keys = list(verdicts)
        cur = self.conn.execute(
            """
            INSERT INTO ctxgraph.follow_verdicts
                   (tip_sha256, script_sha256, model, prompt_sha256, followed, reasoning, error, response_format)
            SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::boolean[], %s::text[],
                                 %s::text[], %s::text[])
            ON CONFLICT (tip_sha256, script_sha256, model, prompt_sha256) DO NOTHING
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

    def write_scores(self, skill: str, scores: Sequence[RowScore]) -> int:
        """Write the DEF-27 columns and the leg statuses of a batch: two statements in all.

        Only rows still unscored are touched, so a row stamped by anyone else meanwhile is left alone.
        """
        if not scores:
            return 0
        cur = self.conn.execute(
            """
            UPDATE ctxgraph.tip_retrievals AS r
               SET tip_followed_llm = v.llm,
                   tip_followed_emb = v.emb,
                   tip_followed_computed_at = CASE WHEN v.stamp THEN clock_timestamp() END
              FROM unnest(%s::bigint[], %s::boolean[], %s::double precision[], %s::boolean[])
                   AS v (id, llm, emb, stamp)
             WHERE r.skill = %s AND r.id = v.id AND r.tip_followed_computed_at IS NULL
            """,
            (
                [s.retrieval_id for s in scores],
                [s.llm for s in scores],
                [s.emb for s in scores],
                [s.stamp for s in scores],
                skill,
            ),
        )
        written = cur.rowcount
        self.conn.execute(
            """
            INSERT INTO ctxgraph.retrieval_scores AS s
                   (skill, retrieval_id, llm_status, emb_status, judge_model, prompt_sha256, embed_model,
                    embed_mode, script_sha256, scored_at)
            SELECT %s, v.*, clock_timestamp()
              FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[],
                          %s::text[]) AS v
            ON CONFLICT (skill, retrieval_id) DO UPDATE
               SET llm_status = excluded.llm_status, emb_status = excluded.emb_status,
                   judge_model = excluded.judge_model, prompt_sha256 = excluded.prompt_sha256,
                   embed_model = excluded.embed_model, embed_mode = excluded.embed_mode,
                   script_sha256 = excluded.script_sha256, scored_at = excluded.scored_at
            """,
            (
                skill,
                [s.retrieval_id for s in scores],
                [s.llm_status for s in scores],
                [s.emb_status for s in scores],
                [s.judge_model for s in scores],
                [s.prompt_sha256 for s in scores],
                [s.embed_model for s in scores],
                [s.embed_mode for s in scores],
                [s.script_sha256 for s in scores],
            ),
        )
        return written


def _vector_literal(vec: np.ndarray) -> str:
    return "[" + ",".join(f"{float(x):.8g}" for x in np.asarray(vec, dtype=np.float32).ravel()) + "]"
