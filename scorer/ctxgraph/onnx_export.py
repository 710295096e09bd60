"""The ONNX exports of the embedding model, written at install time, and the command line that writes them.

:func:`export_onnx` traces the (packaged) model's transformer into an ONNX graph in float32, keeps it
only if it reproduces the torch model on probe texts, and quantises it to int8 weights; the files go
where :class:`ctxgraph.embed.Embedder` looks for them (:func:`ctxgraph.embed.default_onnx_dir`, one
folder per model digest) and are what its onnx-fp32 and onnx-int8 runtimes run. The embedding leg
never exports: ``scripts/provision-python.sh`` runs ``python -m ctxgraph.embed export-onnx``
(:func:`main`, which also says which runtime an embedder would use now).

No SQL; of ctxgraph it imports only :mod:`ctxgraph.embed`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np

from ctxgraph.embed import (
    _ONNX_FILES,
    Embedder,
    EmbeddingUnavailable,
    _onnx_file,
    _onnx_pipeline_problem,
    default_onnx_dir,
)

__all__ = ["export_onnx", "main"]

_PROBES: Final[tuple[str, ...]] = (
    "Use update-crypto-policies --set FUTURE; do not edit ssh_config by hand.",
    "#!/usr/bin/env bash\nset -euo pipefail\nsysctl -w net.ipv4.ip_forward=0\n",
    "x",
)


def export_onnx(model_path: str | None = None, onnx_dir: str | Path | None = None, *,
                runtimes: Sequence[str] = ("onnx-fp32", "onnx-int8"), force: bool = False) -> dict[str, Path]:
    """Write the ONNX exports of the (packaged) model offline; return the file of each runtime.

    Idempotent: an export already present is kept unless ``force``. The float32 graph is traced from
    the torch model (batch and sequence length dynamic) and checked against it on probe texts before
    it is kept; the int8 one is its dynamic quantisation (int8 weights of every MatMul). Files are
    written under a temporary name and renamed, so a killed export never leaves a half file behind.
    Raises EmbeddingUnavailable when the model cannot be loaded or the export does not match.
    """
    for runtime in runtimes:
        if runtime not in _ONNX_FILES:
            raise ValueError(f"not an ONNX runtime: {runtime!r}")
    torch_embedder = Embedder(model_path, runtime="torch")
    folder = Path(onnx_dir).expanduser() if onnx_dir is not None else default_onnx_dir()
    problem = _onnx_pipeline_problem(torch_embedder._model)
    if problem is not None:
        raise EmbeddingUnavailable(f"cannot export: {problem}")
    fp32 = _onnx_file(folder, torch_embedder.model_digest, "onnx-fp32")
    fp32.parent.mkdir(parents=True, exist_ok=True)
    if force or not fp32.is_file():
        _trace_fp32(torch_embedder, fp32)
    written = {"onnx-fp32": fp32} if "onnx-fp32" in runtimes else {}
    if "onnx-int8" in runtimes:
        int8 = _onnx_file(folder, torch_embedder.model_digest, "onnx-int8")
        if force or not int8.is_file():
            from onnxruntime.quantization import QuantType, quantize_dynamic

            tmp = int8.with_suffix(".partial.onnx")
            quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"],
                             per_channel=True, reduce_range=True)
            tmp.replace(int8)
        written["onnx-int8"] = int8
    return written


def _trace_fp32(torch_embedder: Embedder, target: Path) -> None:
    import torch

    transformer = torch_embedder._model[0].auto_model.eval()

    class _Hidden(torch.nn.Module):
        # The export's inputs by name, its one output the last hidden state (pooling stays in numpy).
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids, return_dict=True).last_hidden_state

    features = torch_embedder._model.tokenize(list(_PROBES))
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {name: {0: "batch", 1: "sequence"} for name in [*names, "last_hidden_state"]}
    tmp = target.with_suffix(".partial.onnx")
    import warnings

    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes about Python branches, checked below instead
        torch.onnx.export(_Hidden(transformer), tuple(features[n] for n in names), str(tmp), input_names=names,
                          output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17, dynamo=False)
    # A traced graph can bake in a branch taken for the example's shapes: check other shapes (one
    # text, several of unlike length, one at the full window) against torch before keeping it.
    probe_texts = [_PROBES[0], *(_PROBES[1] * 40,), "restart sshd", _PROBES[2]]
    expected = torch_embedder.encode(probe_texts)
    candidate = Embedder(str(torch_embedder.model_path), runtime="onnx-fp32", onnx_dir=tmp.parent.parent)
    candidate._adopt_session(tmp)
    got = candidate.encode(probe_texts)
    single = candidate.encode(probe_texts[:1])
    worst = float(min(np.min(np.sum(expected * got, axis=1)), float(expected[0] @ single[0])))
    if worst < 0.99999:
        tmp.unlink(missing_ok=True)
        raise EmbeddingUnavailable(f"the ONNX export does not reproduce the torch model (cosine {worst:.6f})")
    tmp.replace(target)


def main(argv: list[str] | None = None) -> int:
    """``python -m ctxgraph.embed export-onnx``: write the ONNX exports (install time), or say which
    runtime an embedder would use now (``which``)."""
    parser = argparse.ArgumentParser(prog="python -m ctxgraph.embed", description=main.__doc__)
    parser.add_argument("command", choices=("export-onnx", "which"))
    parser.add_argument("--model", default=None, help="model folder (default: the packaged model)")
    parser.add_argument("--onnx-dir", default=None, help=f"export folder (default: {default_onnx_dir()})")
    parser.add_argument("--force", action="store_true", help="export again even if the files exist")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        if args.command == "export-onnx":
            for runtime, path in export_onnx(args.model, args.onnx_dir, force=args.force).items():
                print(f"{runtime}: {path}")
        else:
            embedder = Embedder(args.model, onnx_dir=args.onnx_dir)
            print(f"{embedder.runtime} ({embedder.runtime_note}); model id {embedder.model_name}")
    except (EmbeddingUnavailable, ImportError, OSError) as exc:
        print(f"ctxgraph.embed: {exc}", file=sys.stderr)
        return 1
    return 0
