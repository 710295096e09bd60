#!/usr/bin/env bash
# Writes docs/sql-api.md (or the file given as $1), the SQL API reference, from the catalog of a
# fresh deploy: creates a throwaway database on the embedded cluster (or DATABASE_URL's server),
# deploys it with sqitch, runs scripts/gen-sql-api.py against it and drops it. `make docs` runs
# this; scripts/check-sql-api.sh runs it into a temporary file and diffs. Exit 2 when the
# database cannot be created, deployed or read.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
output=${1:-$root/docs/sql-api.md}
python=${PYTHON:-$root/.venv/bin/python}
if [ ! -x "$python" ]; then
  echo "gen-sql-api: $python is missing; run: make provision-python" >&2
  exit 2
fi
source scripts/db-env.sh

db="ctxgraph_apidoc_$$_$(date +%s)"
trap 'drop_database "$db"' EXIT

create_database "$db" || exit 2
PGDATABASE="$db" sqitch deploy --quiet >/dev/null || { echo "gen-sql-api: sqitch deploy failed" >&2; exit 2; }
"$python" scripts/gen-sql-api.py --dsn "$(url_for "$db")" --output "$output" || exit 2
