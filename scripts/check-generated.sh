#!/usr/bin/env bash
# Fails (exit 1) when tests/pgtap/10-role-matrix.sql is not what scripts/gen-role-tests.py makes of
# the role matrix in README.md now: a grant changed in the README without regenerating the test,
# or the generated test edited by hand. Exit 2 when the matrix cannot be read. Needs python3 only
# (no database), so it can run first in make test and in CI.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
committed="$root/tests/pgtap/10-role-matrix.sql"
fresh=$(mktemp "${TMPDIR:-/tmp}/10-role-matrix.XXXXXX.sql")
trap 'rm -f "$fresh"' EXIT

python3 "$root/scripts/gen-role-tests.py" --readme "$root/README.md" --output "$fresh" || exit 2

if [ ! -f "$committed" ]; then
  echo "check-generated: $committed is missing; run: python3 scripts/gen-role-tests.py" >&2
  exit 1
fi
if ! diff -u --label "$committed (committed)" --label "from README.md's role matrix (fresh)" "$committed" "$fresh"; then
  echo "check-generated: tests/pgtap/10-role-matrix.sql is stale; run: python3 scripts/gen-role-tests.py" >&2
  exit 1
fi
echo "check-generated: tests/pgtap/10-role-matrix.sql matches README.md's role matrix"
