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
  against what the tip prescribes and warns against, and the skill's latest calibration
  (:mod:`ctxgraph.calibration`; a documented default before the first) turns it and the cosine
  into ``follow_probability``, with the matched items kept as evidence in
  ``ctxgraph.retrieval_scores.follow_evidence``. With ``judge_policy='uncertain'`` the judge is
  asked only where that probability falls inside the calibration's cascade band; rows decided
  without it say so (``llm_status = 'decided_by_signal'``).

Failure semantics (ADR-0019, DESIGN.md): a row whose leg failed *transiently* (HTTP error, timeout,
judge unreachable, model missing) keeps ``tip_followed_computed_at`` NULL, so the next pass retries
it; a *permanent* failure (no script in the log, an unparseable verdict) is recorded with its
reason in ``ctxgraph.retrieval_scores`` and the row is stamped. A leg that is off for the whole
run (no prompt for the skill, no judge configured, ``--no-judge``) leaves its column NULL, says
so, and the pass still completes.

Each batch is claimed with ``FOR UPDATE SKIP LOCKED`` and committed on its own: two passes never
score a row twice, and a pass killed half way loses only its open batch.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psycopg

from ctxgraph import calibration as calibration_leg
from ctxgraph import follow_signal
from ctxgraph import judge as judge_leg
from ctxgraph.embed import DEFAULT_MAX_CHUNKS, chunk_digest
from ctxgraph.runlog import AttemptRecord, ScriptIndex, read_run_log
from ctxgraph.store import CachedVerdict, ClaimedRow, Client, RowScore, Store, VerdictKey

__all__ = ["PassConfig", "PassSummary", "run_pass"]

# Whole-leg states that are worth retrying in the next pass (the row is then left unstamped);
# every other off state (disabled, no prompt, no judge configured) is final for this pass.
RETRY_OFF_STATES = {"judge_unreachable", "model_missing"}


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
    use_judge: bool = True
    use_embed: bool = True
    batch_size: int = 256
    embed_model_path: str | None = None
    prompts_dir: Path | None = None
    judge_policy: str = "all"
    use_signal: bool = True
    # The embedding leg: at most max_chunks chunks per script (embed.Embedder.script_chunks); the
    # runtime (None: $CTXGRAPH_EMBED_RUNTIME, else auto); embed_plan "run" encodes every distinct chunk
    # of the run once, length-sorted, through ctxgraph.chunk_embeddings, and "batch" is the method
    # before it (each claimed batch's scripts encoded on their own, torch, no cache), kept so that
    # bench/scoring_pass.py measures both in one run.
    max_chunks: int = DEFAULT_MAX_CHUNKS
    embed_runtime: str | None = None
    embed_plan: str = "run"


@dataclass
class PassSummary:
    """What a pass did: rows per leg, NULLs by reason, seconds per leg, and plain-words notes."""

    skill: str
    run_id: str
    unscored_before: int = 0
    claimed: int = 0
    stamped: int = 0
    llm_written: int = 0
    emb_written: int = 0
    llm_status: Counter[str] = field(default_factory=Counter)
    emb_status: Counter[str] = field(default_factory=Counter)
    judge_calls: int = 0
    judge_calls_saved: int = 0
    judge_cache_hits: int = 0
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
    # The run log's index: its problems with their line numbers, and how each row's script was found.
    script_index: ScriptIndex | None = None

    @property
    def left_for_retry(self) -> int:
        return self.claimed - self.stamped

    def render(self) -> str:
        """The end-of-pass summary, for a terminal."""
        lines = [
            f"ctxgraph score: skill {self.skill}, run {self.run_id}",
            f"  retrievals unscored before: {self.unscored_before}; scored now: {self.stamped}; "
            f"left for the next pass: {self.left_for_retry}",
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
        if self.judge_calls_saved:
            lines.append(f"  judge cascade: {self.judge_calls} questions asked, {self.judge_calls_saved} not asked "
                         "(the calibrated probability was outside the cascade band)")
        llm_nulls = {k: v for k, v in self.llm_status.items() if k != "judged"}
        emb_nulls = {k: v for k, v in self.emb_status.items() if k != "computed"}
        if llm_nulls:
            lines.append("  tip_followed_llm NULL by reason: " + _counts(llm_nulls))
        if emb_nulls:
            lines.append("  tip_followed_emb NULL by reason: " + _counts(emb_nulls))
        signal_nulls = {k: v for k, v in self.signal_status.items() if k != "computed"}
        if signal_nulls:
            lines.append("  follow_probability NULL by reason: " + _counts(signal_nulls))
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
        if not config.use_judge:
            self.off_status = "judge_disabled"
            summary.notes.append(f"judge leg off (--no-judge): follow weights come from {_fallback(config)}")
            return
        prompt = judge_leg.load_prompt(config.skill, config.prompts_dir)
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
                "judge leg skipped: no judge server (--judge-url or CTXGRAPH_JUDGE_URL); "
                f"tip_followed_llm stays NULL and follow weights come from {_fallback(config)}"
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
        self.prompt_sha = judge_leg.prompt_hash(prompt)
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

    def score(self, tip: str, script: str, digest: str, cosine: float | None) -> tuple[float, dict]:
        if tip not in self._tips:
            self._tips[tip] = follow_signal.extract_tip(tip)
        if digest not in self._scripts:
            self._scripts[digest] = follow_signal.extract_script(script)
        features = follow_signal.agreement(self._tips[tip], self._scripts[digest])
        probability = self.calibration.probability(calibration_leg.design_row(features.values, cosine))
        evidence = {
            "signal_version": follow_signal.SIGNAL_VERSION,
            "features": features.values,
            "prescribed": [[i["kind"], i["text"], round(i["matched"], 3)] for i in features.evidence["prescribed"]],
            "warned": [[i["kind"], i["text"], round(i["matched"], 3)] for i in features.evidence["warned"]],
        }
        return probability, evidence


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
    """Score every unscored retrieval of one run; each batch commits on its own.

    Raises store.UnknownSkill for an unknown skill, OSError for an unreadable log and psycopg errors
    when the database fails; per-row and per-leg failures never raise: they end up as NULLs with a
    reason in the summary.
    """
    started = time.perf_counter()
    summary = PassSummary(config.skill, config.run_id)
    store = Store(conn)
    store.skill_grading(config.skill)
    summary.unscored_before = store.count_unscored(config.skill, config.run_id)
    conn.commit()

    if summary.unscored_before == 0:
        summary.notes.append(f"nothing to score: every retrieval of run {config.run_id} is already scored")
        summary.total_seconds = time.perf_counter() - started
        return summary

    log = read_run_log(config.log_path, config.run_id)
    summary.log_problems.update(log.problems_by_kind())
    index = ScriptIndex.from_run_log(log)
    summary.script_index = index
    if not log.attempts:
        summary.notes.append(f"the run log has no attempt lines for run {config.run_id}")

    judge = _JudgeLeg(config, summary)
    embed = _EmbedLeg(config, summary)
    signal = _SignalLeg(conn, config, summary)
    if config.judge_policy == "uncertain" and judge.client is not None:
        band = signal.calibration.band()
        if band is None:
            summary.notes.append("judge cascade: the calibration in force has no cascade band; the judge is "
                                 "asked everywhere (run ctxgraph calibrate to fit one)")

    if embed.off_status is None and config.embed_plan == "run":
        # Gather the whole run's scripts before the first claim, so each distinct chunk is encoded
        # once, in length-sorted batches, whatever batch its rows are claimed in.
        began = time.perf_counter()
        pending = store.unscored_rows(config.skill, config.run_id)
        conn.commit()
        embed.prepare(store, config.skill, _attach_scripts(pending, index)[1], commit=conn.commit,
                      progress=progress)
        conn.commit()
        summary.embed_seconds += time.perf_counter() - began

    tried: list[int] = []
    while True:
        rows = store.claim_batch(config.skill, config.run_id, config.batch_size, tried)
        if not rows:
            conn.rollback()
            break
        tried.extend(row.retrieval_id for row in rows)
        scores = _score_batch(store, config, rows, index, judge, embed, signal, summary)
        store.write_scores(config.skill, scores)
        conn.commit()
        summary.claimed += len(rows)
        summary.stamped += sum(1 for s in scores if s.stamp)
        if progress:
            progress(
                f"{config.run_id}: {summary.claimed}/{summary.unscored_before} retrievals processed, "
                f"{summary.stamped} scored ({summary.llm_written} judged, {summary.emb_written} embedded)"
            )
    if summary.stamped:
        # New follow weights change every effect fit they touch: refit the skill's effects once,
        # at the end, in a short transaction of its own. Through ensure_tip_effects, which records
        # the fit, so that evict_tips right after the pass decides on it without refitting.
        began = time.perf_counter()
        summary.effects_fitted = Client(conn).ensure_tip_effects(config.skill)
        conn.commit()
        summary.effects_seconds = time.perf_counter() - began
    summary.total_seconds = time.perf_counter() - started
    return summary


def _score_batch(
    store: Store,
    config: PassConfig,
    rows: list[ClaimedRow],
    index: ScriptIndex,
    judge: _JudgeLeg,
    embed: _EmbedLeg,
    signal: _SignalLeg,
    summary: PassSummary,
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

    probability: dict[int, float] = {}
    evidence: dict[int, dict] = {}
    if signal.off_status is None:
        for row, script, digest in with_script:
            probability[row.retrieval_id], evidence[row.retrieval_id] = signal.score(
                row.tip_body, script, digest, emb_value.get(row.retrieval_id))

    # The cascade: with judge_policy 'uncertain', a row whose probability lies outside the band is
    # decided by the signal (a cached verdict is still used: it costs nothing).
    band = signal.calibration.band() if config.judge_policy == "uncertain" and signal.off_status is None else None

    def needs_judge(rid: int) -> bool:
        return band is None or rid not in probability or band[0] <= probability[rid] <= band[1]

    llm_value: dict[int, bool | None] = {}
    llm_status: dict[int, str] = {}
    llm_retry: set[int] = set()
    if judge.client is not None and with_script:
        began = time.perf_counter()
        keys = {
            row.retrieval_id: VerdictKey(sha256(row.tip_body), digest, judge.client.model, judge.prompt_sha or "")
            for row, _, digest in with_script
        }
        cached = store.cached_verdicts(keys.values())
        texts = {keys[row.retrieval_id]: (row.tip_body, s) for row, s, _ in with_script}
        wanted = {key for rid, key in keys.items() if needs_judge(rid)}
        summary.judge_calls_saved += len({k for k in keys.values() if k not in cached and k not in wanted})
        to_ask = [key for key in dict.fromkeys(keys.values()) if key not in cached and key in wanted]
        summary.judge_cache_hits += sum(1 for key in keys.values() if key in cached)
        fresh: dict[VerdictKey, CachedVerdict] = {}
        transient: dict[VerdictKey, str] = {}
        if to_ask:
            outcomes = judge.client.judge_many_sync([texts[key] for key in to_ask])
            summary.judge_calls += len(to_ask)
            for key, outcome in zip(to_ask, outcomes):
                if outcome.verdict is not None:
                    fresh[key] = CachedVerdict(outcome.verdict.followed, outcome.verdict.reasoning, None,
                                               outcome.response_format)
                elif outcome.transient:
                    transient[key] = outcome.error or "http_error"
                else:
                    fresh[key] = CachedVerdict(None, None, outcome.error or "unparseable", outcome.response_format)
            store.save_verdicts(fresh)
        answers = {**cached, **fresh}
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
                llm_status[retrieval_id] = transient.get(key, "http_error")
                llm_retry.add(retrieval_id)
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
                stamp=(rid not in llm_retry and l_status not in RETRY_OFF_STATES
                       and e_status not in RETRY_OFF_STATES),
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
