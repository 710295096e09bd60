"""The embedding leg's speed work: the chunk cache, length-sorted batching, the chunk cap and the
ONNX/torch runtimes, against the real model and (for the pass) the real PostgreSQL."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import psycopg
import pytest

from ctxgraph import embed, onnx_export, scoring_pass
from ctxgraph.connection_store import connect
from ctxgraph.embed import Embedder, chunk_digest, follow_cosine
from ctxgraph.scoring_store import Store

LINES = [
    "install -d -m 0755 /etc/ssh/sshd_config.d",
    "printf 'ClientAliveInterval 600\\nClientAliveCountMax 1\\n' > /etc/ssh/sshd_config.d/50-idle.conf",
    "sshd -t && systemctl reload sshd",
    "update-crypto-policies --set FUTURE",
    "authselect enable-feature with-faillock",
    "sysctl -w net.ipv4.ip_forward=0 && echo 'net.ipv4.ip_forward = 0' > /etc/sysctl.d/90-forward.conf",
    "augenrules --load",
    "grubby --update-kernel=ALL --args='audit=1'",
]


def long_script(tag: str, lines: int) -> str:
    """A shell script of ``lines`` distinct lines (each tagged), so no two chunks are alike."""
    body = [f"{LINES[i % len(LINES)]}  # {tag} step {i}" for i in range(lines)]
    return "#!/usr/bin/env bash\nset -euo pipefail\n" + "\n".join(body) + "\n"


@pytest.fixture(scope="module")
def torch_embedder() -> Embedder:
    return Embedder(batch_size=4, runtime="torch")


@pytest.fixture(scope="module")
def onnx_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The install's export if provisioning wrote one, else a fresh export (the code path is the same)."""
    installed = embed.default_onnx_dir()
    probe = Embedder(runtime="onnx-fp32", onnx_dir=installed)
    if probe.runtime == "onnx-fp32":
        return installed
    folder = tmp_path_factory.mktemp("onnx")
    onnx_export.export_onnx(onnx_dir=folder, runtimes=("onnx-fp32",))
    return folder


@pytest.fixture(scope="module")
def onnx_embedder(onnx_dir: Path) -> Embedder:
    embedder = Embedder(batch_size=4, runtime="onnx-fp32", onnx_dir=onnx_dir)
    assert embedder.runtime == "onnx-fp32", embedder.runtime_note
    return embedder


# -- runtimes and the fallback ---------------------------------------------------------------------
def test_onnx_without_an_export_falls_back_to_torch(tmp_path: Path, torch_embedder: Embedder) -> None:
    embedder = Embedder(runtime="onnx-fp32", onnx_dir=tmp_path)
    assert embedder.runtime == "torch"
    assert "no export" in embedder.runtime_note and str(tmp_path) in embedder.runtime_note
    assert embedder.model_name == torch_embedder.model_name  # torch's vectors, torch's id
    texts = ["restart sshd after editing", "sysctl --system"]
    np.testing.assert_allclose(embedder.encode(texts), torch_embedder.encode(texts), atol=1e-6)


def test_auto_takes_the_default_runtime_when_exported(
    monkeypatch: pytest.MonkeyPatch, onnx_dir: Path, tmp_path: Path
) -> None:
    monkeypatch.setattr(embed, "native_bf16_kernel", lambda: None)  # a CPU without bfloat16 instructions
    assert Embedder(runtime="auto", onnx_dir=onnx_dir).runtime == embed.DEFAULT_RUNTIME
    assert Embedder(runtime="auto", onnx_dir=tmp_path).runtime == "torch"


def test_auto_takes_bf16_where_the_cpu_runs_it_natively(monkeypatch: pytest.MonkeyPatch, onnx_dir: Path,
                                                        torch_embedder: Embedder) -> None:
    monkeypatch.setattr(embed, "native_bf16_kernel", lambda: "amx")
    embedder = Embedder(runtime="auto", onnx_dir=onnx_dir)
    assert embedder.runtime == embed.NATIVE_BF16_RUNTIME and embedder.runtime_note == "torch-bf16 on amx"
    # The kernel and the torch build are part of the vectors' id: another CPU's rounding is another key.
    assert embedder.model_name.startswith(torch_embedder.model_name + "+torch-bf16@torch-")
    assert embedder.model_name.endswith("-amx")


def test_bf16_asked_for_by_name_runs_even_where_it_is_emulated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embed, "native_bf16_kernel", lambda: None)
    embedder = Embedder(runtime="torch-bf16")
    assert embedder.runtime == "torch-bf16" and "emulated" in embedder.runtime_note
    assert embedder.model_name.endswith("-emulated")


def test_bf16_falls_back_to_torch_for_a_model_it_cannot_pool(monkeypatch: pytest.MonkeyPatch,
                                                             torch_embedder: Embedder) -> None:
    # Pooling is done outside the model, as for ONNX: a model that is not transformer + mean pooling
    # runs on torch float32, under torch's id, and says why.
    monkeypatch.setattr(embed, "_onnx_pipeline_problem", lambda model: "pooling is not mean pooling (cls)")
    embedder = Embedder(runtime="torch-bf16")
    assert embedder.runtime == "torch"
    assert embedder.runtime_note == "torch-bf16 not used: pooling is not mean pooling (cls); torch runs"
    assert embedder.model_name == torch_embedder.model_name


def test_bf16_cosines_stay_within_a_hundredth_of_float32(torch_embedder: Embedder) -> None:
    # The goal the runtime is held to: every tip-to-chunk cosine within 0.01 of the float32 model's.
    bf16 = Embedder(batch_size=4, runtime="torch-bf16")
    chunks = bf16.chunk(long_script("bf16", 90)) + ["sysctl -w net.ipv4.ip_forward=0", "x", "", "   padded   "]
    tips = ["Use update-crypto-policies --set FUTURE.", "Restart sshd only after sshd -t passes.",
            "Set kernel.randomize_va_space = 2 in a sysctl drop-in."]
    wide = bf16.encode(tips) @ bf16.encode(chunks).T
    exact = torch_embedder.encode(tips) @ torch_embedder.encode(chunks).T
    assert np.abs(wide - exact).max() < 0.01
    assert np.sum(bf16.encode(chunks) * torch_embedder.encode(chunks), axis=1).min() > 0.999


def test_runtime_from_the_environment(monkeypatch: pytest.MonkeyPatch, onnx_dir: Path) -> None:
    monkeypatch.setenv(embed.RUNTIME_ENV, "torch")
    assert Embedder(onnx_dir=onnx_dir).runtime == "torch"
    monkeypatch.setenv(embed.RUNTIME_ENV, "onnx-fastest")
    with pytest.raises(ValueError, match="unknown embedding runtime"):
        Embedder(onnx_dir=onnx_dir)


def test_onnx_vectors_match_torch(onnx_embedder: Embedder, torch_embedder: Embedder) -> None:
    texts = ["Use update-crypto-policies --set FUTURE.", long_script("match", 60), "x", "", "   padded   "]
    cosines = np.sum(onnx_embedder.encode(texts) * torch_embedder.encode(texts), axis=1)
    assert cosines.min() > 0.9999
    # Each runtime names its own vectors, so a cache never serves one runtime's to the other.
    assert onnx_embedder.model_name != torch_embedder.model_name
    assert onnx_embedder.model_name.startswith(torch_embedder.model_name + "+onnx-fp32@")


@pytest.mark.parametrize("which", ["torch", "onnx", "torch-bf16"])
def test_length_sorted_batches_give_the_cosines_of_one_by_one_encoding(
    which: str, torch_embedder: Embedder, onnx_embedder: Embedder
) -> None:
    embedder = {"torch": torch_embedder, "onnx": onnx_embedder}.get(which) or Embedder(batch_size=4, runtime=which)
    script = long_script("sorted", 90)
    chunks = embedder.chunk(script)
    texts = [*chunks, "sshd -t", "Set ClientAliveInterval 600 in a drop-in.", chunks[0][:40]]
    together = embedder.encode(texts)  # batches of 4, each of texts of like length: padding differs
    alone = np.vstack([embedder.encode([text]) for text in texts])
    assert len({len(t) for t in texts}) > 4, "the texts must differ in length for padding to matter"
    # float32 gives the same numbers whatever the batch; bfloat16 rounds each product's output, and
    # another batch shape can round a value the other way: within 1e-3, far inside its 0.01 goal.
    tolerance = 1e-3 if which == "torch-bf16" else 1e-5
    np.testing.assert_allclose(np.sum(together * alone, axis=1), 1.0, atol=tolerance)
    tip = embedder.encode(["update-crypto-policies --set FUTURE"])[0]
    for mode in embed.MODES:
        assert follow_cosine(tip, together[: len(chunks)], mode) == pytest.approx(
            follow_cosine(tip, alone[: len(chunks)], mode), abs=tolerance)


def test_onnx_batches_hold_at_most_batch_tokens_padded_tokens(onnx_dir: Path, onnx_embedder: Embedder) -> None:
    # The cap on a batch's tokens is what bounds the pass's memory: a batch of long chunks is cut
    # short, short texts still share a batch, and the vectors are those of unbounded batches.
    capped = Embedder(batch_size=8, batch_tokens=300, runtime="onnx-fp32", onnx_dir=onnx_dir)
    chunks = capped.chunk(long_script("budget", 60))
    texts = [*chunks, "sshd -t", "sysctl --system", "restart sshd after editing", "chmod 600 /etc/ssh/*key"]
    lengths = [len(ids) for ids in capped._tokenizer(texts, truncation=True, max_length=capped.max_tokens)["input_ids"]]
    batches = capped._token_batches(texts)
    assert sorted(i for batch in batches for i in batch) == list(range(len(texts)))
    for batch in batches:
        assert len(batch) <= 8
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= 300
    assert max(lengths) > 150, "some chunk must be long enough to go alone"
    assert any(len(batch) == 1 and lengths[batch[0]] > 150 for batch in batches)
    assert any(len(batch) > 1 for batch in batches), "the short texts share a batch"
    np.testing.assert_allclose(np.sum(capped.encode(texts) * onnx_embedder.encode(texts), axis=1), 1.0, atol=1e-5)
    with pytest.raises(ValueError, match="batch_tokens"):
        Embedder(batch_tokens=0, runtime="torch")


# -- the chunk cap ---------------------------------------------------------------------------------
def test_cap_keeps_evenly_spread_chunks_with_the_first_and_last(torch_embedder: Embedder) -> None:
    script = long_script("cap", 120)  # short enough to be chunked whole under a cap of 5
    every = torch_embedder.chunk(script)
    capped = Embedder(runtime="torch", max_chunks=5)
    assert len(script) <= 5 * capped.window * 12
    kept, cut = capped.script_chunks(script)
    assert len(every) > 5 and cut
    assert len(kept) == 5 and kept[0] == every[0] and kept[-1] == every[-1]
    assert all(k in every for k in kept)
    positions = [every.index(k) for k in kept]
    assert positions == sorted(positions) and max(np.diff(positions)) - min(np.diff(positions)) <= 1
    assert torch_embedder.script_chunks(script) == (every, False)  # under the default cap, all of them


def test_a_giant_script_is_sampled_not_tokenised_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = Embedder(runtime="torch", max_chunks=8)
    giant = long_script("giant", 40_000)  # about 2.6 MB, far past 8 x 254 x 12 characters
    seen: list[int] = []
    real = embedder.chunk_spans

    def spy(text: str) -> list[tuple[int, int]]:
        seen.append(len(text))
        return real(text)

    monkeypatch.setattr(embedder, "chunk_spans", spy)
    kept, cut = embedder.script_chunks(giant)
    assert cut and len(kept) == 8
    assert max(seen) <= embedder.window * 12, "only excerpts are tokenised"
    assert kept[0] == giant[: len(kept[0])]
    starts = [giant.index(k) for k in kept]
    assert starts == sorted(starts) and starts[-1] > 0.9 * len(giant)
    tok = embedder._tokenizer
    for piece in kept:
        assert len(tok(piece, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]) <= 256
        assert piece.startswith(("#!", "install", "printf", "sshd", "update", "authselect", "sysctl", "augen",
                                 "grubby")), "an excerpt starts on a line"


# -- the pass and the chunk cache ------------------------------------------------------------------
def cache_rows(conn: psycopg.Connection, model: str, digests: list[str]) -> int:
    count = conn.execute("SELECT count(*) FROM ctxgraph.chunk_embeddings WHERE model = %s AND chunk_sha256 = ANY(%s)",
                         (model, digests)).fetchone()[0]
    conn.commit()
    return int(count)


def unscore(conn: psycopg.Connection, ids: list[int]) -> None:
    conn.execute("UPDATE ctxgraph.tip_retrievals SET tip_followed_computed_at = NULL, tip_followed_emb = NULL"
                 " WHERE id = ANY(%s)", (ids,))
    conn.commit()


def emb(conn: psycopg.Connection, ids: list[int]) -> list[float | None]:
    rows = conn.execute("SELECT tip_followed_emb FROM ctxgraph.tip_retrievals WHERE id = ANY(%s) ORDER BY id",
                        (ids,)).fetchall()
    conn.commit()
    return [r[0] for r in rows]


def run(seeded, **overrides) -> scoring_pass.PassSummary:
    options = dict(skill=seeded.skill, run_id=seeded.run_id, log_path=seeded.log_path, batch_size=2,
                   use_judge=False, use_signal=False, embed_runtime="torch")
    options.update(overrides)
    conn = connect(os.environ["DATABASE_URL"])
    try:
        return scoring_pass.run_pass(conn, scoring_pass.PassConfig(**options))
    finally:
        conn.close()


def test_second_pass_encodes_nothing_new(conn: psycopg.Connection, seed, torch_embedder: Embedder) -> None:
    tag = uuid.uuid4().hex[:8]
    shared = long_script(f"shared {tag}", 50)
    scripts = [shared, shared + "echo attempt two\n", long_script(f"other {tag}", 30)]
    seeded = seed([{"rule": f"r{n}", "tips": [f"tip {n} {tag}", f"Use sysctl.d drop-ins {tag}"], "script": s}
                   for n, s in enumerate(scripts)])
    first = run(seeded)
    assert first.embed_runtime == "torch"
    chunks = {c for s in scripts for c in torch_embedder.chunk(s)}
    # Chunks shared by the two versions of a script are encoded once, although the claim batches
    # (2 rows each) put the scripts' rows in different batches.
    assert first.chunks_distinct == len(chunks) and first.chunks_encoded == len(chunks)
    assert cache_rows(conn, first.embed_model, [chunk_digest(c) for c in chunks]) == len(chunks)
    values = emb(conn, seeded.retrieval_ids)
    assert all(v is not None for v in values)

    unscore(conn, seeded.retrieval_ids)
    second = run(seeded)
    assert second.chunks_encoded == 0 and second.chunks_cached == len(chunks)
    assert emb(conn, seeded.retrieval_ids) == pytest.approx(values, abs=1e-6)
    assert "0 encoded" in second.render() and "runtime torch" in second.render()


def test_cached_vectors_are_read_and_kept_apart_by_model(
    conn: psycopg.Connection, seed, monkeypatch: pytest.MonkeyPatch, torch_embedder: Embedder
) -> None:
    tag = uuid.uuid4().hex[:8]
    script = long_script(f"cached {tag}", 4)
    tip = f"Reload sshd after a drop-in {tag}"
    seeded = seed([{"rule": "r", "tips": [tip], "script": script}])
    (chunk,) = torch_embedder.chunk(script)
    expected = follow_cosine(torch_embedder.encode([tip])[0], torch_embedder.encode([chunk]))
    # A vector pointing elsewhere, cached under another model's id for this very chunk: never read.
    elsewhere = torch_embedder.encode(["completely unrelated text about cooking pasta"])[0]
    Store(conn).save_chunk_vectors("other-model@000000000000", {chunk_digest(chunk): elsewhere})
    conn.commit()
    first = run(seeded)
    assert first.chunks_encoded == 1
    assert emb(conn, seeded.retrieval_ids) == [pytest.approx(expected, abs=1e-5)]

    # The same model folder with another digest (a changed file) is another model: nothing reused.
    unscore(conn, seeded.retrieval_ids)
    real_digest = embed._folder_digest
    monkeypatch.setattr(embed, "_folder_digest", lambda path: "f" * 12 + real_digest(path)[12:])
    changed = run(seeded)
    assert changed.embed_model != first.embed_model
    assert changed.chunks_encoded == 1 and changed.chunks_cached == 0
    assert cache_rows(conn, changed.embed_model, [chunk_digest(chunk)]) == 1


def test_a_capped_script_still_gets_a_cosine(conn: psycopg.Connection, seed) -> None:
    tag = uuid.uuid4().hex[:8]
    script = long_script(f"capped {tag}", 300)
    seeded = seed([{"rule": "r", "tips": [f"Load the audit rules with augenrules --load {tag}"], "script": script}])
    summary = run(seeded, max_chunks=3)
    assert summary.scripts_capped == 1 and summary.chunks_distinct == 3
    assert emb(conn, seeded.retrieval_ids)[0] is not None
    assert "1 scripts past the cap of 3 chunks" in summary.render()


def test_pass_says_when_the_onnx_runtime_falls_back(
    conn: psycopg.Connection, seed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(embed.ONNX_DIR_ENV, str(tmp_path))
    seeded = seed([{"rule": "r", "tips": [f"tip {uuid.uuid4().hex[:8]}"], "script": "sysctl --system\n"}])
    summary = run(seeded, embed_runtime="onnx-fp32")
    assert summary.embed_runtime == "torch"
    assert any("onnx-fp32 not used: no export" in note for note in summary.notes)
    assert emb(conn, seeded.retrieval_ids)[0] is not None


def test_pass_on_onnx_matches_torch(conn: psycopg.Connection, seed, monkeypatch: pytest.MonkeyPatch,
                                    onnx_dir: Path) -> None:
    monkeypatch.setenv(embed.ONNX_DIR_ENV, str(onnx_dir))
    tag = uuid.uuid4().hex[:8]
    seeded = seed([{"rule": f"r{n}", "tips": [f"Use grubby to set audit=1 {tag}", f"tip {n} {tag}"],
                    "script": long_script(f"{tag} {n}", 40 + 20 * n)} for n in range(2)])
    on_torch = run(seeded)
    reference = emb(conn, seeded.retrieval_ids)
    unscore(conn, seeded.retrieval_ids)
    on_onnx = run(seeded, embed_runtime="onnx-fp32")
    assert on_onnx.embed_runtime == "onnx-fp32" and on_torch.embed_runtime == "torch"
    assert on_onnx.chunks_encoded == on_torch.chunks_encoded  # another model id: nothing from torch's cache
    assert emb(conn, seeded.retrieval_ids) == pytest.approx(reference, abs=1e-4)


def test_the_bench_runs_the_adr_method_on_the_rows_a_pass_would_score(conn: psycopg.Connection, tmp_path: Path) -> None:
    # make bench's scoring-pass part reads the rows to score the way the pass does; a rename in the
    # store must break this test, not the benchmark on a user's machine.
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_scoring_pass",
                                                  Path(__file__).resolve().parents[1] / "bench" / "scoring_pass.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    tips_path, log_path, run_id = bench.build(tmp_path, 2, 2, f"test-{uuid.uuid4().hex[:8]}", distinct=True)
    bench.load(conn, "stig", tips_path, log_path)
    _, sampled, rows = bench.adr_method(conn, "stig", run_id, log_path, 3)
    assert (sampled, rows) == (3, 4)
