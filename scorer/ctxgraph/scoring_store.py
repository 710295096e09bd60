"""The scoring pass's SQL: :class:`Store`, on a connection the caller owns (and commits).

:class:`Store` holds the scoring pass's reads and batched writes (its leases, the rows it claims, the
results it writes, the tip, chunk and verdict caches), the loader's tip lookups, and the label
resolution and signal reads of ``ctxgraph evaluate``; :class:`ClaimedRow`, :class:`RowScore`,
:class:`VerdictKey` and :class:`CachedVerdict` are the rows they read and write.

Every statement is parameterised; every batch is one statement (``UPDATE ... FROM unnest(...)`` or
``INSERT ... SELECT unnest(...)``), never a round trip per row. Nothing here commits on its own.

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

import numpy as np
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from ctxgraph.connection_store import require_skill

__all__ = ["CachedVerdict", "ClaimedRow", "RowScore", "Store", "VerdictKey"]


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


def _vector_literal(vec: np.ndarray) -> str:
    return "[" + ",".join(f"{float(x):.8g}" for x in np.asarray(vec, dtype=np.float32).ravel()) + "]"
