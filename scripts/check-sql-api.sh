#!/usr/bin/env bash
# Fails (exit 1) when docs/sql-api.md is not what scripts/gen-sql-api.py makes of the catalog of a
# fresh deploy now: a deploy script changed a function, view, table, comment or grant without the
# page being regenerated, or the page was edited by hand. Exit 2 when the throwaway database cannot
# be created, deployed or read. scripts/gen-sql-api.sh makes and drops that database (trap).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
committed="$root/docs/sql-api.md"
fresh=$(mktemp "${TMPDIR:-/tmp}/sql-api.XXXXXX.md")
trap 'rm -f "$fresh"' EXIT

bash "$root/scripts/gen-sql-api.sh" "$fresh" || exit 2

if [ ! -f "$committed" ]; then
  echo "check-sql-api: $committed is missing; run: make docs" >&2
  exit 1
fi
if ! diff -u --label "docs/sql-api.md (committed)" --label "from a fresh deploy's catalog (fresh)" "$committed" "$fresh"; then
  echo "check-sql-api: docs/sql-api.md is stale; run: make docs" >&2
  exit 1
fi
echo "check-sql-api: docs/sql-api.md matches a fresh deploy's catalog"
