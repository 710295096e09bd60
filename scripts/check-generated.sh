#!/usr/bin/env bash
# Fails (exit 1) when a file scripts/gen-role-tests.py writes from the role matrix in
# docs/role-matrix.csv is not what it makes of the matrix now: tests/pgtap/10-role-matrix.sql, or the
# matrix block of docs/operations.md (between the role-matrix markers). That is, a grant changed in
# the CSV without regenerating, or a generated file edited by hand. Exit 2 when the matrix or the
# docs page cannot be read. Needs python3 only (no database), so it can run first in make test and in CI.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
committed="$root/tests/pgtap/10-role-matrix.sql"
committed_docs="$root/docs/operations.md"
fresh=$(mktemp "${TMPDIR:-/tmp}/10-role-matrix.XXXXXX.sql")
fresh_docs=$(mktemp "${TMPDIR:-/tmp}/operations.XXXXXX.md")
trap 'rm -f "$fresh" "$fresh_docs"' EXIT

if [ ! -f "$committed_docs" ]; then
  echo "check-generated: $committed_docs is missing" >&2
  exit 2
fi
cp "$committed_docs" "$fresh_docs"
python3 "$root/scripts/gen-role-tests.py" --matrix "$root/docs/role-matrix.csv" --output "$fresh" \
  --docs "$fresh_docs" || exit 2

run="run: python3 scripts/gen-role-tests.py"
status=0
if [ ! -f "$committed" ]; then
  echo "check-generated: $committed is missing; $run" >&2
  status=1
elif ! diff -u --label "$committed (committed)" --label "from docs/role-matrix.csv (fresh)" \
    "$committed" "$fresh"; then
  echo "check-generated: tests/pgtap/10-role-matrix.sql is stale; $run" >&2
  status=1
fi
if ! diff -u --label "$committed_docs (committed)" --label "from docs/role-matrix.csv (fresh)" \
    "$committed_docs" "$fresh_docs"; then
  echo "check-generated: the role matrix in docs/operations.md is stale; $run" >&2
  status=1
fi
if [ "$status" -ne 0 ]; then
  exit "$status"
fi
echo "check-generated: tests/pgtap/10-role-matrix.sql and the role matrix in docs/operations.md" \
  "match docs/role-matrix.csv"
