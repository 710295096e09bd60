"""The scoring pass (ADR-0019's dream pass): fill the DEF-27 columns of a run's retrievals.

For every retrieval of the run whose ``tip_followed_computed_at`` is NULL, the pass finds the fix
script of the attempt the tip was retrieved for (by ``attempt_id``, else by run, rule and the
attempt window containing ``retrieved_at``; never by position), runs both legs and writes the
results back in batches:

- the judge leg asks an OpenAI-compatible server whether the script followed the tip
  (``tip_followed_llm``); answers are cached by content, model and prompt, so a question is
  never asked twice;
- the embedding leg stores the cosine between tip and script (``tip_followed_emb``);
- the follow signal (:mod:`ctxgraph.follow_signal`) reads what the script's executable lines do
  against what the tip prescribes and warns against, contrasted with the tip's other scored
  scripts, and the skill's latest calibration (:mod:`ctxgraph.follow_signal.calibration`; a documented default
  before the first) turns it and the cosine into ``follow_probability``, with the matched items
  kept as evidence in ``ctxgraph.retrieval_scores.follow_evidence``. With ``judge_policy='uncertain'`` the judge is
  asked only where that probability falls inside the calibration's cascade band, and on a share of
  the rows outside it that checks the band on this run (:class:`calibration.CascadeCheck`: when the
  checks disagree more than the band allows, the judge is asked everywhere); rows decided without it
  say so (``llm_status = 'decided_by_signal'``).

Failure semantics (ADR-0019, DESIGN.md): a row is stamped (``tip_followed_computed_at`` set, never
scored again) only when both legs' results are final, that is what the same model, prompt and inputs
would give again: a verdict, an unparseable answer, a cosine, a leg switched off on purpose. Which
statuses are final is ``ctxgraph.scoring_statuses``' to say, and ``ctxgraph.write_scoring_results``
decides. A missing script (no attempt line in the log, a truncated line, no ``fix_script``), a judge
that is down, times out, or answers 401, 403 or 404, and an empty ``--judge-url`` record their reason
in ``ctxgraph.retrieval_scores`` and leave the row for the next pass. ``rescore`` names statuses of
stamped rows to score again (a re-scored row is rewritten only when its new result is final).

A judge that keeps failing is given up on: after the first 401/403/404, or once
``judge_give_up_after`` questions in a row have failed on server trouble after their retries (HTTP
5xx, 429, timeouts, connection errors), the pass asks it nothing more (the questions in flight are
abandoned) and leaves every row it did not judge unscored, with that failure's status, for the next
pass; the summary says so. Judge answers are bounded (:mod:`ctxgraph.judge`: at most 1 MiB read per
answer) and so is the reasoning cached with a verdict (at most ``judge_prompt.MAX_REASONING_CHARS``
characters, cut before it is written).

Concurrency: the pass leases rows instead of locking them (deploy/scoring_leases.sql). Each batch is
claimed in one short statement (``ctxgraph.claim_scoring_batch``); the judge and the embeddings run
with no transaction open (the connection is in autocommit for the pass); every judge answer is cached
in its own statement the moment it arrives, so a killed pass loses only the questions in flight; the
batch is written back in short groups that touch only rows still leased to this pass and skip, for a
later try, any row a writer holds. Two passes never score a row twice; a writer never waits for the
pass longer than one short write.

Refusals (:class:`PassRefused`, exit 2 from the CLI, nothing written): an unknown run, an unknown
rescore reason, and a run log that matches none of the run's retrievals' attempts (another run's log).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import numpy as np
import psycopg

from ctxgraph.follow_signal import calibration as calibration_leg
from ctxgraph import follow_signal
from ctxgraph import judge as judge_leg
from ctxgraph import judge_prompt
from ctxgraph.client import Client
from ctxgraph.embed import DEFAULT_MAX_CHUNKS, chunk_digest
from ctxgraph.fit import ensure_fit
from ctxgraph.runlog import AttemptRecord, ScriptIndex, read_run_log
from ctxgraph.scoring_store import CachedVerdict, ClaimedRow, RowScore, Store, VerdictKey

__all__ = ["PassConfig", "PassRefused", "PassSummary", "run_pass"]

# A write-back group: small enough that a writer queued behind it waits only for a short statement.
_WRITE_GROUP = 64
# A cached error that older versions stored for HTTP failures now known to be configuration errors
# (401, 403, 404): not an answer, so asked again (and the cache row replaced).
_LEGACY_HTTP_ERROR = judge_leg.ERR_HTTP
# The status of a cached permanent HTTP refusal (any 4xx but 401, 403, 404; 400/422 in every mode).
_HTTP_REFUSED = "http_refused"
#: Questions in a row that may fail on server trouble, each after its retries, before the pass gives
#: up on the judge for the rest of the pass (PassConfig.judge_give_up_after).
JUDGE_GIVE_UP_AFTER: Final = 8
# The judge's transient failures that say the server is in trouble (not the question, not the
# configuration): a run of them, each after its retries, ends the judge leg for the pass.
_SERVER_TROUBLE: Final = frozenset({judge_leg.ERR_HTTP, judge_leg.ERR_TIMEOUT, judge_leg.ERR_CONNECTION,
                                    judge_leg.ERR_RATE_LIMITED})


class PassRefused(ValueError):
    """The pass cannot start as asked (unknown run or reason, a log of another run); nothing was written."""


@dataclass
class PassConfig:
    """What one pass scores and how."""

    skill: str
    run_id: str
    log_path: Path
    judge_url: str | None = None
    judge_model: str | None = None
    concurrency: int = 8
    judge_timeout: float = 60.0
    judge_retries: int = 3
    judge_backoff: float = 0.5
    # After this many questions in a row failed on server trouble (5xx, 429, timeouts, connection
    # errors), each after its judge_retries, the pass asks the judge nothing more and leaves the rows
    # it did not judge for the next pass. 0: never give up.
    judge_give_up_after: int = JUDGE_GIVE_UP_AFTER
    use_judge: bool = True
    use_embed: bool = True
    batch_size: int = 256
    embed_model_path: str | None = None
    prompts_dir: Path | None = None
    judge_policy: str = "all"
    # judge_policy 'uncertain': the share of rows outside the band the judge is still asked about,
    # to test the band on this run (calibration.CascadeCheck); 0 trusts the band unchecked.
    cascade_check_share: float = calibration_leg.CASCADE_CHECK_SHARE
    cascade_check_first: int = calibration_leg.CASCADE_CHECK_FIRST
    use_signal: bool = True
    # The embedding leg: at most max_chunks chunks per script (embed.Embedder.script_chunks); the
    # runtime (None: $CTXGRAPH_EMBED_RUNTIME, else auto); embed_plan "run" encodes every distinct chunk
    # of the run once, length-sorted, through ctxgraph.chunk_embeddings, and "batch" is the method
    # before it (each claimed batch's scripts encoded on their own, torch, no cache), kept so that
    # bench/scoring_pass.py measures both in one run.
    max_chunks: int = DEFAULT_MAX_CHUNKS
    embed_runtime: str | None = None
    embed_plan: str = "run"
    # Statuses of stamped rows to score again (ctxgraph.scoring_statuses names them).
    rescore: tuple[str, ...] = ()
    # How long a write-back keeps retrying rows a writer holds before leaving them to the next pass.
    write_retry_seconds: float = 30.0
    # How often the pass renews its leases while it works (None: a third of scoring.lease_seconds).
    lease_renew_seconds: float | None = None


@dataclass
class PassSummary:
    """What a pass did: rows per leg, NULLs by reason, seconds per leg, and plain-words notes."""

    skill: str
    run_id: str
    unscored_before: int = 0
    claimed: int = 0
    stamped: int = 0
    rescored: int = 0
    kept: int = 0
    taken_by_others: int = 0
    busy_given_up: int = 0
    llm_written: int = 0
    emb_written: int = 0
    llm_status: Counter[str] = field(default_factory=Counter)
    emb_status: Counter[str] = field(default_factory=Counter)
    judge_calls: int = 0
    judge_calls_saved: int = 0
    # Why the pass gave up on the judge (a run of server failures), and how many questions it then
    # did not ask; None when it did not give up.
    judge_given_up: str | None = None
    judge_not_asked: int = 0
    judge_cache_hits: int = 0
    cascade: calibration_leg.CascadeCheck | None = None
    signal_written: int = 0
    signal_status: Counter[str] = field(default_factory=Counter)
    calibration: str | None = None
    judge_seconds: float = 0.0
    embed_seconds: float = 0.0
    total_seconds: float = 0.0
    effects_fitted: int | None = None
    effects_seconds: float = 0.0
    judge_model: str | None = None
    embed_model: str | None = None
    embed_runtime: str | None = None
    chunks_distinct: int = 0
    chunks_cached: int = 0
    chunks_encoded: int = 0
    scripts_capped: int = 0
    max_chunks: int = DEFAULT_MAX_CHUNKS
    notes: list[str] = field(default_factory=list)
    log_problems: Counter[str] = field(default_factory=Counter)
    retry_reasons: Counter[str] = field(default_factory=Counter)
    lease_renewals: int = 0
    # The run log's index: its problems with their line numbers, and how each row's script was found.
    script_index: ScriptIndex | None = None

    @property
    def left_for_retry(self) -> int:
        return self.claimed - self.stamped - self.kept - self.taken_by_others

    def render(self) -> str:
        """The end-of-pass summary, for a terminal."""
        lines = [
            f"ctxgraph score: skill {self.skill}, run {self.run_id}",
            f"  retrievals to score: {self.unscored_before}; scored now: {self.stamped}"
            + (f" ({self.rescored} re-scored, {self.kept} kept as they were)" if self.rescored or self.kept else "")
            + f"; left for the next pass: {self.left_for_retry}",
            f"  judge leg ({self.judge_model or 'off'}): {self.llm_written} verdicts written, "
            f"{self.judge_calls} questions asked, {self.judge_cache_hits} answered from cache, "
            f"{self.judge_seconds:.1f} s",
            f"  embedding leg ({self.embed_model or 'off'}"
            + (f", runtime {self.embed_runtime}" if self.embed_runtime else "")
            + f"): {self.emb_written} cosines written, {self.embed_seconds:.1f} s",
            f"  follow signal ({self.calibration or 'off'}): {self.signal_written} probabilities written",
        ]
        if self.embed_runtime:
            lines.append(f"  script chunks: {self.chunks_distinct} distinct, {self.chunks_cached} from the cache, "
                         f"{self.chunks_encoded} encoded; {self.scripts_capped} scripts past the cap of "
                         f"{self.max_chunks} chunks (scored on {self.max_chunks} chunks spread over each)")
        if self.judge_calls_saved or self.cascade is not None:
            lines.append(f"  judge cascade: {self.judge_calls} questions asked, {self.judge_calls_saved} not asked "
                         "(the calibrated probability was outside the cascade band)"
                         + (f"; {self.cascade.describe()}" if self.cascade is not None else ""))
        llm_nulls = {k: v for k, v in self.llm_status.items() if k != "judged"}
        emb_nulls = {k: v for k, v in self.emb_status.items() if k != "computed"}
        if llm_nulls:
            lines.append("  tip_followed_llm NULL by reason: " + _counts(llm_nulls))
        if emb_nulls:
            lines.append("  tip_followed_emb NULL by reason: " + _counts(emb_nulls))
        signal_nulls = {k: v for k, v in self.signal_status.items() if k != "computed"}
        if signal_nulls:
            lines.append("  follow_probability NULL by reason: " + _counts(signal_nulls))
        if self.retry_reasons:
            lines.append("  left for the next pass by reason: " + _counts(self.retry_reasons))
        if self.lease_renewals or self.taken_by_others:
            lines.append(f"  leases: renewed {self.lease_renewals} times while batches were worked on; "
                         f"{self.taken_by_others} rows taken over by another pass after their lease expired")
        if self.script_index is not None:
            lines.extend(f"  {line}" for line in self.script_index.report_lines())
        elif self.log_problems:
            lines.append("  run-log problems (lines skipped or incomplete): " + _counts(self.log_problems))
        if self.effects_fitted is not None:
            lines.append(f"  tip effects refitted for {self.effects_fitted} tips with evidence, "
                         f"{self.effects_seconds:.1f} s")
        lines.extend(f"  note: {note}" for note in self.notes)
        lines.append(f"  total {self.total_seconds:.1f} s")
        return "\n".join(lines)


def _counts(counter: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _fallback(config: PassConfig) -> str:
    """What decides the follow weight when the judge is silent, for the pass's notes."""
    if config.use_signal:
        return "the follow signal (follow_probability)"
    return "the embedding fallback (cosine >= follow.emb_threshold)"


class _JudgeLeg:
    """The judge leg for one pass: either a client, or the reason it is off."""

    def __init__(self, config: PassConfig, summary: PassSummary) -> None:
        self.client: judge_leg.JudgeClient | None = None
        self.off_status: str | None = None
        self.prompt_sha: str | None = None
        self.config_error: str | None = None
        # A run of server failures (see _SERVER_TROUBLE): how long the current one is, and, once it
        # reaches give_up_after, why the pass gave up and the status the unasked rows keep.
        self.give_up_after = config.judge_give_up_after
        self.failures_in_a_row = 0
        self.given_up: str | None = None
        self.given_up_status = judge_leg.ERR_HTTP
        if not config.use_judge:
            self.off_status = "judge_disabled"
            summary.notes.append(f"judge leg off (--no-judge): follow weights come from {_fallback(config)}")
            return
        prompt = judge_prompt.load_prompt(config.skill, config.prompts_dir)
        if prompt is None:
            self.off_status = "no_prompt"
            summary.notes.append(
                f"judge leg skipped: skill {config.skill} has no prompt "
                f"(scorer/ctxgraph/prompts/{config.skill}/tip_follow_judge.md); tip_followed_llm stays NULL"
            )
            return
        if not config.judge_url:
            self.off_status = "judge_not_configured"
            summary.notes.append(
                "judge leg skipped: no judge server (--judge-url or CTXGRAPH_JUDGE_URL); the rows stay "
                "unscored for a pass with a judge (--no-judge scores them without one)"
            )
            return
        model = config.judge_model
        if not model:
            try:
                models = judge_leg.list_models(config.judge_url, timeout=min(config.judge_timeout, 30.0))
            except judge_leg.JudgeError as exc:
                self.off_status = "judge_unreachable"
                summary.notes.append(
                    f"judge leg failed for the whole run: {exc}; tip_followed_llm stays NULL and these rows "
                    "stay unscored, so the next pass asks again"
                )
                return
            if not models:
                self.off_status = "judge_unreachable"
                summary.notes.append(f"judge leg failed: {config.judge_url} lists no model; pass --judge-model")
                return
            model = models[0]
        self.prompt_sha = judge_prompt.prompt_hash(prompt)
        # Set at the first 401/403/404: the rest of the pass asks nothing more, the rows stay unscored.
        self.config_error = None
        self.client = judge_leg.JudgeClient(
            config.judge_url, model, prompt, timeout=config.judge_timeout,
            max_retries=config.judge_retries, concurrency=config.concurrency,
            backoff_base=config.judge_backoff,
        )
        summary.judge_model = model


class _EmbedLeg:
    """The embedding leg for one pass: the model, each tip's vector and each distinct script's chunk
    vectors, each computed once (and chunk vectors once per model, through ctxgraph.chunk_embeddings)."""

    def __init__(self, config: PassConfig, summary: PassSummary) -> None:
        self.embedder = None
        self.off_status: str | None = None
        self.mode: str | None = None
        self.script_vectors: dict[str, np.ndarray] = {}
        self.tip_vectors: dict[int, np.ndarray] = {}
        self.summary = summary
        self.plan = config.embed_plan
        if config.embed_plan not in ("run", "batch"):
            raise ValueError(f"embed_plan must be 'run' or 'batch', not {config.embed_plan!r}")
        if not config.use_embed:
            self.off_status = "embed_disabled"
            summary.notes.append("embedding leg off (--no-embed): tip_followed_emb stays NULL")
            return
        from ctxgraph import embed  # the model import is heavy; only when the leg runs

        try:
            if config.embed_plan == "batch":
                self.embedder = embed.Embedder(config.embed_model_path, batch_size=64, runtime="torch",
                                               max_chunks=config.max_chunks)
            else:
                self.embedder = embed.Embedder(config.embed_model_path, runtime=config.embed_runtime,
                                               max_chunks=config.max_chunks)
            summary.embed_model = self.embedder.model_name
        except embed.EmbeddingUnavailable as exc:
            self.off_status = "model_missing"
            summary.notes.append(
                f"embedding leg failed for the whole run: {exc}; rows stay unscored for the next pass"
            )
            return
        summary.embed_runtime = self.embedder.runtime
        summary.max_chunks = config.max_chunks
        if self.embedder.runtime == "torch" and " not used: " in self.embedder.runtime_note:
            summary.notes.append(f"embedding runtime: {self.embedder.runtime_note}")
        self.mode = embed.DEFAULT_MODE
        self._follow_cosine = embed.follow_cosine

    def prepare(self, store: Store, skill: str, pairs: list[tuple[ClaimedRow, str, str]],
                commit: Callable[[], None] | None = None, progress: Callable[[str], None] | None = None) -> None:
        """Compute what these (row, script, script digest) triples need and is not known yet.

        Tip vectors come from tips.embedding (filled where missing). With plan "run", every script is
        cut into at most max_chunks chunks, the distinct chunks are looked up in the cache by hash and
        the rest encoded together, longest first, in groups that are cached (and, given ``commit``,
        committed) as they finish: a killed pass keeps what it encoded.
        """
        assert self.embedder is not None
        missing_tips = {row.tip_id: row.tip_body for row, _, _ in pairs if row.tip_id not in self.tip_vectors}
        if missing_tips:
            stored = store.tip_vectors(skill, missing_tips)
            self.tip_vectors.update(stored)
            fresh_ids = [tip_id for tip_id in missing_tips if tip_id not in stored]
            if fresh_ids:
                encoded = self.embedder.encode([missing_tips[i] for i in fresh_ids])
                fresh = {tip_id: encoded[n] for n, tip_id in enumerate(fresh_ids)}
                store.save_tip_vectors(skill, fresh)
                self.tip_vectors.update(fresh)
        new_scripts = {d: s for _, s, d in pairs if d not in self.script_vectors}
        if not new_scripts:
            return
        if self.plan == "batch":
            chunked = self.embedder.script_chunk_vectors(list(new_scripts.values()))
            self.script_vectors.update(zip(new_scripts, chunked))
            return
        model = self.embedder.model_name
        texts: dict[str, str] = {}
        layout: dict[str, list[str]] = {}
        for digest, script in new_scripts.items():
            chunks, capped = self.embedder.script_chunks(script)
            self.summary.scripts_capped += capped
            keys = [chunk_digest(chunk) for chunk in chunks]
            texts.update(zip(keys, chunks))
            layout[digest] = keys
        known = store.chunk_vectors(model, texts)
        missing = sorted((k for k in texts if k not in known), key=lambda k: -len(texts[k]))
        self.summary.chunks_distinct += len(texts)
        self.summary.chunks_cached += len(texts) - len(missing)
        for start in range(0, len(missing), _ENCODE_GROUP):
            group = missing[start : start + _ENCODE_GROUP]
            vectors = self.embedder.encode([texts[k] for k in group])
            fresh = dict(zip(group, vectors))
            store.save_chunk_vectors(model, fresh)
            if commit is not None:
                commit()
            known.update(fresh)
            self.summary.chunks_encoded += len(group)
            if progress:
                progress(f"embedding: {self.summary.chunks_encoded}/{len(missing)} new script chunks encoded "
                         f"({len(texts) - len(missing)} of {len(texts)} from the cache)")
        for digest, keys in layout.items():
            self.script_vectors[digest] = np.stack([known[k] for k in keys])

    def cosines(self, store: Store, skill: str, pairs: list[tuple[ClaimedRow, str, str]]) -> list[float | None]:
        """Cosine per (row, script, script digest); anything the up-front prepare() missed is computed now."""
        self.prepare(store, skill, pairs)
        result: list[float | None] = []
        for row, _, digest in pairs:
            cosine = self._follow_cosine(self.tip_vectors[row.tip_id], self.script_vectors[digest], self.mode)
            if cosine is not None and math.isfinite(cosine):
                cosine = max(-1.0, min(1.0, cosine))  # float error may step past the column's range
            else:
                cosine = None
            result.append(cosine)
        return result


# Chunks encoded, cached and committed together before the first claim: large enough for the runtime
# to stream well-filled batches, small enough that a killed pass loses little work.
_ENCODE_GROUP = 1024


class _SignalLeg:
    """The follow signal for one pass: the calibration in force, and each text's extraction once."""

    def __init__(self, conn: psycopg.Connection, config: PassConfig, summary: PassSummary) -> None:
        self.off_status: str | None = None
        self.calibration = calibration_leg.DEFAULT
        self._tips: dict[str, follow_signal.TipItems] = {}
        self._scripts: dict[str, follow_signal.ScriptView] = {}
        if not config.use_signal:
            self.off_status = "signal_disabled"
            return
        row = Client(conn).current_follow_calibration(config.skill, follow_signal.SIGNAL_VERSION)
        conn.commit()
        if row is not None:
            self.calibration = calibration_leg.Calibration.from_row(row)
        summary.calibration = self.calibration.label()

    def features(self, tip: str, script: str, digest: str) -> follow_signal.Features:
        if tip not in self._tips:
            self._tips[tip] = follow_signal.extract_tip(tip)
        if digest not in self._scripts:
            self._scripts[digest] = follow_signal.extract_script(script)
        return follow_signal.agreement(self._tips[tip], self._scripts[digest])

    def score_batch(self, store: Store, skill: str, rows: list[tuple[ClaimedRow, str, str]],
                    cosines: dict[int, float | None]) -> dict[int, tuple[float, dict]]:
        """Probability and evidence per retrieval id. Each script is contrasted with the tip's other
        scripts (calibration.PeerSums): those scored before (stored evidence of this signal version,
        this batch's own rows left out, since a rescore replaces theirs) and the batch's others."""
        features = {row.retrieval_id: self.features(row.tip_body, script, digest) for row, script, digest in rows}
        stored = store.peer_feature_sums(skill, follow_signal.SIGNAL_VERSION, sorted({r.tip_id for r, _, _ in rows}),
                                         calibration_leg.PEER_FEATURES, [r.retrieval_id for r, _, _ in rows])
        totals = {tip: calibration_leg.PeerSums(n, sums) for tip, (n, sums) in stored.items()}
        for row, _, _ in rows:
            totals[row.tip_id] = totals.get(row.tip_id, calibration_leg.PeerSums()).plus(
                features[row.retrieval_id].values)
        out: dict[int, tuple[float, dict]] = {}
        for row, _, _ in rows:
            values = features[row.retrieval_id].values
            peers = totals[row.tip_id].minus(values)
            design = calibration_leg.design_values(values, cosines.get(row.retrieval_id), peers)
            found = features[row.retrieval_id].evidence
            out[row.retrieval_id] = (self.calibration.probability_of(design), {
                "signal_version": follow_signal.SIGNAL_VERSION,
                "features": values,
                "peers": peers.count,
                "prescribed": [[i["kind"], i["text"], round(i["matched"], 3)] for i in found["prescribed"]],
                "warned": [[i["kind"], i["text"], round(i["matched"], 3)] for i in found["warned"]],
            })
        return out


def _script_for(row: ClaimedRow, index: ScriptIndex) -> AttemptRecord | None:
    """The attempt the retrieval belongs to, by the index's mapping rule (runlog.ScriptIndex.attempt_for):
    a log line's attempt_id only when it names this row's attempt, else the attempt's number, else
    (unlinked rows) the attempt window; never by position."""
    return index.attempt_for(row)


def _attach_scripts(rows: list[ClaimedRow], index: ScriptIndex
                    ) -> tuple[dict[int, str | None], list[tuple[ClaimedRow, str, str]]]:
    """Each row's script (None when missing or blank), and (row, script, digest) for rows with one."""
    scripts: dict[int, str | None] = {}
    for row in rows:
        record = _script_for(row, index)
        script = record.fix_script if record is not None else None
        scripts[row.retrieval_id] = script if script and script.strip() else None
    # Each distinct script is hashed once per call (scripts can be long, and rows share them).
    digests: dict[str, str] = {}
    with_script: list[tuple[ClaimedRow, str, str]] = []
    for row in rows:
        script = scripts[row.retrieval_id]
        if script is not None:
            if script not in digests:
                digests[script] = sha256(script)
            with_script.append((row, script, digests[script]))
    return scripts, with_script


def run_pass(
    conn: psycopg.Connection,
    config: PassConfig,
    progress: Callable[[str], None] | None = None,
) -> PassSummary:
    """Score every unscored retrieval of one run (and, with ``rescore``, the rows stamped for those reasons).

    The connection is put in autocommit for the pass (each statement is its own short transaction;
    nothing stays open while the judge or the embeddings work) and given back as it was.
    Raises UnknownSkill (ctxgraph.connection_store) for an unknown skill, PassRefused for an unknown run
    or reason or a log of another run, OSError for an unreadable log and psycopg errors when the database fails;
    per-row and per-leg failures never raise: they end up as NULLs with a reason in the summary.
    """
    started = time.perf_counter()
    summary = PassSummary(config.skill, config.run_id)
    store = Store(conn)
    store.skill_grading(config.skill)
    conn.commit()
    autocommit = conn.autocommit
    conn.autocommit = True
    try:
        _run(conn, store, config, summary, progress)
    finally:
        if not conn.closed:
            conn.autocommit = autocommit
    summary.total_seconds = time.perf_counter() - started
    return summary


def _run(conn: psycopg.Connection, store: Store, config: PassConfig, summary: PassSummary,
         progress: Callable[[str], None] | None) -> None:
    try:
        candidates = store.scoring_candidates(config.skill, config.run_id, config.rescore)
    except (psycopg.errors.NoDataFound, psycopg.errors.InvalidParameterValue) as exc:
        raise PassRefused(_sql_message(exc)) from exc
    summary.unscored_before = len(candidates)
    if not candidates:
        what = "scored" if not config.rescore else f"scored and none is stamped {', '.join(config.rescore)}"
        summary.notes.append(f"nothing to score: every retrieval of run {config.run_id} is already {what}")
        return

    log = read_run_log(config.log_path, config.run_id)
    summary.log_problems.update(log.problems_by_kind())
    index = ScriptIndex.from_run_log(log)
    summary.script_index = index
    if not any(_script_for(row, index) is not None for row in candidates):
        raise PassRefused(
            f"the run log {config.log_path} matches none of the attempts of run {config.run_id}'s "
            f"{len(candidates)} retrievals to score ({len(log.attempts)} attempt lines for the run): "
            "is it another run's log? nothing was written"
        )

    judge = _JudgeLeg(config, summary)
    embed = _EmbedLeg(config, summary)
    signal = _SignalLeg(conn, config, summary)
    cascade: calibration_leg.CascadeCheck | None = None
    if config.judge_policy == "uncertain" and judge.client is not None:
        band = signal.calibration.band()
        if band is None:
            summary.notes.append("judge cascade: the calibration in force has no cascade band; the judge is "
                                 "asked everywhere (run ctxgraph calibrate to fit one)")
        else:
            cascade = calibration_leg.CascadeCheck(
                max_disagreement=signal.calibration.cascade_max_disagreement or 0.03,
                share=config.cascade_check_share, first=config.cascade_check_first)
            if config.cascade_check_share > 0:
                # The band's record on the skill's other runs, with this judge: checks already made
                # count, and a band that broke its promise there is not trusted here.
                record = Client(conn).cascade_track_record(
                    config.skill, signal.calibration.calibration_id, follow_signal.SIGNAL_VERSION,
                    judge.client.model, band, other_than_run=config.run_id)
                cascade.add_earlier(record["questions"], record["outside_band"], record["checked"],
                                    record["disagreed"])
                if cascade.stopped:
                    summary.notes.append(
                        f"judge cascade not used: on the skill's earlier runs {cascade.describe()}, more than the "
                        f"band's {cascade.max_disagreement:.0%} allows; the judge was asked for every row. "
                        "ctxgraph calibrate fits a band on this skill's own verdicts")
            summary.cascade = cascade

    if embed.off_status is None and config.embed_plan == "run":
        # Gather the whole run's scripts before the first claim, so each distinct chunk is encoded
        # once, in length-sorted batches, whatever batch its rows are claimed in.
        began = time.perf_counter()
        embed.prepare(store, config.skill, _attach_scripts(candidates, index)[1], progress=progress)
        summary.embed_seconds += time.perf_counter() - began

    pass_id = store.begin_pass()
    renew_every = config.lease_renew_seconds or store.lease_seconds() / 3
    try:
        tried: list[int] = []
        while True:
            rows = store.claim_batch(config.skill, config.run_id, pass_id, config.batch_size, tried, config.rescore)
            if not rows:
                break
            tried.extend(row.retrieval_id for row in rows)
            with _LeaseKeeper(store, config.skill, pass_id, renew_every, summary):
                scores = _score_batch(store, config, rows, index, judge, embed, signal, summary, cascade)
            _write_back(store, config, pass_id, scores, {row.retrieval_id: row.stamped for row in rows}, summary)
            summary.claimed += len(rows)
            if progress:
                progress(
                    f"{config.run_id}: {summary.claimed}/{summary.unscored_before} retrievals processed, "
                    f"{summary.stamped} scored ({summary.llm_written} judged, {summary.emb_written} embedded)"
                )
    except BaseException:
        _end_pass_quietly(store, config.skill, pass_id)
        raise
    store.end_pass(config.skill, pass_id)
    if judge.config_error:
        summary.notes.append(f"the judge refused the pass's configuration ({judge.config_error}); the rows it "
                             "would have judged stay unscored: fix --judge-url / --judge-model and run again")
    if judge.given_up:
        summary.judge_given_up = judge.given_up
        summary.notes.append(
            f"gave up on the judge for the rest of the pass: {judge.given_up}. {summary.judge_not_asked} "
            f"questions were not asked (or abandoned in flight); the rows it did not judge stay unscored "
            f"({judge.given_up_status}) for the next pass")
    if summary.retry_reasons.get("no_script"):
        summary.notes.append(f"{summary.retry_reasons['no_script']} retrievals have no fix script in the log "
                             "(no attempt line, a truncated line or no fix_script); they stay unscored for a "
                             "pass with a complete log")
    if summary.stamped:
        # New follow weights change every effect fit they touch: refit the skill's effects and
        # blame once, at the end (ctxgraph.fit; its write is one short transaction), so that
        # evict_tips right after the pass decides on a current fit.
        began = time.perf_counter()
        run = ensure_fit(conn, config.skill)
        summary.effects_fitted = run.tips_with_evidence or 0
        summary.effects_seconds = time.perf_counter() - began


class _LeaseKeeper:
    """Renews the pass's leases every ``every`` seconds while a batch is worked on, so that a batch slower
    than a lease (a slow judge) is not taken over by another pass and asked again.

    It runs in a thread of its own on the pass's connection: psycopg serialises the statements of one
    connection across threads, and the connection is in autocommit, so a renewal is one short
    statement between the pass's own. A renewal that fails (the connection is gone) ends the keeper;
    the pass's next statement meets the same failure.
    """

    def __init__(self, store: Store, skill: str, pass_id: str, every: float, summary: PassSummary) -> None:
        self._store, self._skill, self._pass_id, self._every, self._summary = store, skill, pass_id, every, summary
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="ctxgraph-lease-keeper", daemon=True)

    def __enter__(self) -> _LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self._every):
            try:
                self._store.renew_leases(self._skill, self._pass_id)
            except psycopg.Error:
                return
            self._summary.lease_renewals += 1


def _sql_message(exc: psycopg.Error) -> str:
    """The database's own wording of a refusal, without its 'ctxgraph: ' prefix."""
    text = exc.diag.message_primary or str(exc)
    return text.removeprefix("ctxgraph: ")


def _end_pass_quietly(store: Store, skill: str, pass_id: str) -> None:
    """Release the pass's leases on the way out of a failure; a dead connection released them already."""
    try:
        store.end_pass(skill, pass_id)
    except psycopg.Error:
        pass


def _write_back(store: Store, config: PassConfig, pass_id: str, scores: list[RowScore],
                stamped_before: dict[int, bool], summary: PassSummary) -> None:
    """Write the batch back in short groups; rows a writer holds are written again after a pause,
    for up to write_retry_seconds, then left (still leased until the pass ends) to the next pass."""
    deadline = time.monotonic() + config.write_retry_seconds
    pause = 0.05
    for start in range(0, len(scores), _WRITE_GROUP):
        pending = scores[start : start + _WRITE_GROUP]
        while pending:
            outcomes = store.write_scores(config.skill, pass_id, pending)
            busy = []
            for score in pending:
                outcome, reason = outcomes[score.retrieval_id]
                if outcome == "busy":
                    busy.append(score)
                elif outcome == "stamped":
                    summary.stamped += 1
                    summary.rescored += stamped_before.get(score.retrieval_id, False)
                elif outcome == "kept":
                    summary.kept += 1
                elif outcome == "left_unscored":
                    summary.retry_reasons[reason or "left_unscored"] += 1
                else:  # already_scored / not_leased: another pass took the row over after this lease expired
                    summary.taken_by_others += 1
            pending = busy
            if pending:
                if time.monotonic() + pause > deadline:
                    summary.busy_given_up += len(pending)
                    summary.retry_reasons["writer_busy"] += len(pending)
                    summary.notes.append(f"{len(pending)} rows stay unscored: writers held them through every "
                                         f"write-back try for {config.write_retry_seconds:.0f} s")
                    break
                time.sleep(pause)
                pause = min(pause * 2, 1.0)


def _score_batch(
    store: Store,
    config: PassConfig,
    rows: list[ClaimedRow],
    index: ScriptIndex,
    judge: _JudgeLeg,
    embed: _EmbedLeg,
    signal: _SignalLeg,
    summary: PassSummary,
    cascade: calibration_leg.CascadeCheck | None = None,
) -> list[RowScore]:
    scripts, with_script = _attach_scripts(rows, index)
    digest_of = {row.retrieval_id: digest for row, _, digest in with_script}

    emb_value: dict[int, float | None] = {}
    emb_status: dict[int, str] = {}
    if embed.off_status is None and with_script:
        began = time.perf_counter()
        for (row, _, _), cosine in zip(with_script, embed.cosines(store, config.skill, with_script)):
            emb_value[row.retrieval_id] = cosine
            emb_status[row.retrieval_id] = "computed" if cosine is not None else "nan"
        summary.embed_seconds += time.perf_counter() - began

    scored = signal.score_batch(store, config.skill, with_script, emb_value) \
        if signal.off_status is None and with_script else {}
    probability: dict[int, float] = {rid: p for rid, (p, _) in scored.items()}
    evidence: dict[int, dict] = {rid: found for rid, (_, found) in scored.items()}

    # The cascade: with judge_policy 'uncertain', a row whose probability lies outside the band is
    # decided by the signal (a cached verdict is still used: it costs nothing), unless its question
    # is one the cascade checks, or the check has stopped the cascade for the rest of the pass.
    band = signal.calibration.band() if config.judge_policy == "uncertain" and signal.off_status is None else None
    if cascade is not None and cascade.stopped:
        band = None

    def outside_band(rid: int) -> bool:
        return band is not None and rid in probability and not band[0] <= probability[rid] <= band[1]

    llm_value: dict[int, bool | None] = {}
    llm_status: dict[int, str] = {}
    if judge.client is not None and with_script:
        began = time.perf_counter()
        keys = {
            row.retrieval_id: VerdictKey(sha256(row.tip_body), digest, judge.client.model, judge.prompt_sha or "")
            for row, _, digest in with_script
        }
        cached = {key: answer for key, answer in store.cached_verdicts(keys.values()).items()
                  if answer.error != _LEGACY_HTTP_ERROR}
        texts = {keys[row.retrieval_id]: (row.tip_body, s) for row, s, _ in with_script}
        # One question per distinct key: where its probability lies, and whether the check takes it.
        outside = {key: rid for rid, key in keys.items() if outside_band(rid)}
        checked = {key for key in outside
                   if cascade is not None and cascade.selected(f"{key.tip_sha256}:{key.script_sha256}")}
        wanted = {key for key in keys.values() if key not in outside or key in checked}
        if cascade is not None and band is not None:
            for key in dict.fromkeys(keys.values()):
                cascade.counted(key in outside)
        to_ask = [key for key in dict.fromkeys(keys.values()) if key not in cached and key in wanted]
        summary.judge_cache_hits += sum(1 for key in keys.values() if key in cached)
        fresh, transient = _ask_judge(store, judge, to_ask, texts, summary)
        answers = {**cached, **fresh}
        if cascade is not None and band is not None:
            for key, rid in outside.items():
                if key in answers and answers[key].followed is not None:
                    cascade.observe(probability[rid], answers[key].followed)
            if cascade.stopped:
                # The band decides this run's rows against the judge more often than it promised:
                # ask the rest of this batch too, and every row from here on.
                rest = [key for key in dict.fromkeys(outside) if key not in answers and key not in wanted]
                wanted.update(rest)
                more, more_transient = _ask_judge(store, judge, rest, texts, summary)
                answers.update(more)
                transient.update(more_transient)
                summary.notes.append(
                    f"judge cascade stopped: {cascade.describe()}, more than the band's "
                    f"{cascade.max_disagreement:.0%} allows; the judge was asked for every row from then on. "
                    "Rows decided by the signal before it stopped say llm_status decided_by_signal: "
                    "ctxgraph score --rescore decided_by_signal asks the judge for them; ctxgraph calibrate "
                    "fits a band on this skill's own verdicts")
        summary.judge_calls_saved += len({k for k in keys.values() if k not in cached and k not in wanted})
        for retrieval_id, key in keys.items():
            if key not in answers and key not in wanted:
                llm_value[retrieval_id] = None
                llm_status[retrieval_id] = "decided_by_signal"
            elif key in answers:
                answer = answers[key]
                llm_value[retrieval_id] = answer.followed
                llm_status[retrieval_id] = "judged" if answer.followed is not None else (answer.error or "unparseable")
            else:
                llm_value[retrieval_id] = None
                llm_status[retrieval_id] = transient.get(key, judge_leg.ERR_HTTP)
        summary.judge_seconds += time.perf_counter() - began

    scores: list[RowScore] = []
    for row in rows:
        rid = row.retrieval_id
        script = scripts[rid]
        if script is None:
            l_status = judge.off_status or "no_script"
            e_status = embed.off_status or "no_script"
        else:
            l_status = judge.off_status or llm_status.get(rid, "judge_skipped")
            e_status = embed.off_status or emb_status.get(rid, "nan")
        llm = llm_value.get(rid)
        emb = emb_value.get(rid)
        p = probability.get(rid)
        s_status = signal.off_status or ("computed" if p is not None else "no_script")
        summary.signal_status[s_status] += 1
        summary.signal_written += p is not None
        summary.llm_status[l_status] += 1
        summary.emb_status[e_status] += 1
        summary.llm_written += llm is not None
        summary.emb_written += emb is not None
        scores.append(
            RowScore(
                retrieval_id=rid,
                llm=llm,
                emb=emb,
                llm_status=l_status,
                emb_status=e_status,
                judge_model=judge.client.model if judge.client is not None and llm is not None else None,
                prompt_sha256=judge.prompt_sha if llm is not None else None,
                embed_model=embed.embedder.model_name if embed.embedder is not None and emb is not None else None,
                embed_mode=embed.mode if emb is not None else None,
                script_sha256=digest_of.get(rid),
                follow_probability=p,
                signal_status=s_status,
                calibration_id=signal.calibration.calibration_id if p is not None else None,
                signal_version=follow_signal.SIGNAL_VERSION if p is not None else None,
                follow_evidence=evidence.get(rid),
            )
        )
    return scores


def _ask_judge(store: Store, judge: _JudgeLeg, to_ask: list[VerdictKey], texts: dict[VerdictKey, tuple[str, str]],
               summary: PassSummary) -> tuple[dict[VerdictKey, CachedVerdict], dict[VerdictKey, str]]:
    """Ask the judge these questions, at most ``concurrency`` at once, caching each answer in its own
    statement as it arrives (a killed pass loses only the questions in flight). Returns the answers
    (verdicts and permanent failures) and the transient failures' codes.

    After the first 401/403/404 nothing more is asked in this pass: the configuration is wrong, every
    question would fail the same way. After ``judge.give_up_after`` questions in a row failed on server
    trouble (each after its retries) nothing more is asked either, and the questions in flight are
    abandoned: the server is down, and each further question would cost its retries for nothing. A
    reasoning is cut to ``judge_prompt.MAX_REASONING_CHARS`` characters before it is written.
    """
    client = judge.client
    assert client is not None
    fresh: dict[VerdictKey, CachedVerdict] = {}
    transient: dict[VerdictKey, str] = {}
    failed: list[psycopg.Error] = []
    tasks: list[asyncio.Task[None]] = []
    if not to_ask:
        return fresh, transient

    def give_up(outcome: judge_leg.JudgeOutcome) -> None:
        """Count a question lost to server trouble; at the limit, stop asking and abandon the rest."""
        judge.failures_in_a_row += 1
        if judge.given_up is not None or not 0 < judge.give_up_after <= judge.failures_in_a_row:
            return
        judge.given_up_status = outcome.error or judge_leg.ERR_HTTP
        judge.given_up = (f"{judge.failures_in_a_row} questions in a row failed on server trouble, each after "
                          f"its retries (the last: {judge.given_up_status}, {outcome.detail or 'no detail'})")
        current = asyncio.current_task()
        for task in tasks:
            if task is not current and not task.done():
                task.cancel()

    def record(key: VerdictKey, outcome: judge_leg.JudgeOutcome) -> None:
        if outcome.verdict is not None:
            # Bounded here too, whatever limit the client was given: this is what gets stored.
            reasoning = judge_prompt.bound_reasoning(outcome.verdict.reasoning, judge_prompt.MAX_REASONING_CHARS)
            answer = CachedVerdict(outcome.verdict.followed, reasoning, None, outcome.response_format)
        elif outcome.transient:
            transient[key] = outcome.error or judge_leg.ERR_HTTP
            if outcome.error == judge_leg.ERR_CONFIG and judge.config_error is None:
                judge.config_error = outcome.detail or outcome.error
            elif outcome.error in _SERVER_TROUBLE:
                give_up(outcome)
            return
        else:
            error = outcome.error or judge_leg.ERR_UNPARSEABLE
            answer = CachedVerdict(None, None, _HTTP_REFUSED if error == judge_leg.ERR_HTTP else error,
                                   outcome.response_format)
        try:
            store.save_verdicts({key: answer})
        except psycopg.Error as exc:
            # The database went away (a restart, say): ask nothing more, let the requests in flight
            # end, then raise it from outside the event loop, so the pass ends with this error alone.
            failed.append(exc)
            return
        judge.failures_in_a_row = 0  # an answer: the server works
        fresh[key] = answer

    async def ask_all() -> None:
        semaphore = asyncio.Semaphore(client.concurrency)

        async def one(key: VerdictKey) -> None:
            async with semaphore:
                if failed:
                    return
                if judge.config_error is not None:
                    transient[key] = judge_leg.ERR_CONFIG
                    return
                if judge.given_up is not None:
                    transient[key] = judge.given_up_status
                    summary.judge_not_asked += 1
                    return
                outcome = await client.judge(*texts[key])
                summary.judge_calls += 1
            if not failed:
                record(key, outcome)

        async with client:
            tasks.extend(asyncio.create_task(one(key)) for key in to_ask)
            results = await asyncio.gather(*tasks, return_exceptions=True)
        for key, result in zip(to_ask, results):
            if isinstance(result, asyncio.CancelledError) and judge.given_up is not None:
                # Abandoned when the pass gave up on the judge (waiting its turn or in flight).
                transient[key] = judge.given_up_status
                summary.judge_not_asked += 1
            elif isinstance(result, BaseException):
                raise result

    if judge.config_error is not None:
        transient.update((key, judge_leg.ERR_CONFIG) for key in to_ask)
    elif judge.given_up is not None:
        transient.update((key, judge.given_up_status) for key in to_ask)
        summary.judge_not_asked += len(to_ask)
    else:
        asyncio.run(ask_all())
    if failed:
        raise failed[0]
    return fresh, transient
