#!/usr/bin/env bash
# Every test, against throwaway databases on the embedded cluster (or DATABASE_URL's server):
# the released-scripts guard, pgTAP through pg_prove and sqitch verify, the sqitch round trip, the
# upgrade from every released tag, then pytest. Exits non-zero on any failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/db-env.sh

suffix="$$_$(date +%s)"
pgtap_db="ctxgraph_pgtap_$suffix"
roundtrip_db="ctxgraph_roundtrip_$suffix"
pytest_db="ctxgraph_pytest_$suffix"
cleanup() { for db in "$pgtap_db" "$roundtrip_db" "$pytest_db"; do drop_database "$db"; done; }
trap cleanup EXIT

status=0
step() { printf '\n== %s\n' "$*"; }

step "released deploy scripts are unchanged (or reworked)"
python3 scripts/check-released.py || status=1

step "the generated role test and docs/operations.md match docs/role-matrix.csv"
bash scripts/check-generated.sh || status=1

step "docs/sql-api.md matches a fresh deploy's catalog"
bash scripts/check-sql-api.sh || status=1

step "pgTAP ($pgtap_db)"
create_database "$pgtap_db"
( export PGDATABASE="$pgtap_db"
  sqitch deploy --quiet >/dev/null
  verified=$(sqitch verify 2>&1) || { printf '%s\n' "$verified"; exit 1; }
  printf 'sqitch verify: %s\n' "$(tail -n 1 <<<"$verified")"
  psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION IF NOT EXISTS pgtap' >/dev/null
  for fixture in tests/fixtures/*.sql; do psql -X -q -v ON_ERROR_STOP=1 -f "$fixture" >/dev/null; done
  pg_prove --failures tests/pgtap/*.sql ) || status=1

step "sqitch round trip ($roundtrip_db)"
create_database "$roundtrip_db"
( export PGDATABASE="$roundtrip_db"; bash scripts/roundtrip.sh ) || status=1

step "upgrade from every released tag"
bash scripts/upgrade-test.sh || status=1

step "pytest ($pytest_db)"
create_database "$pytest_db"
( export PGDATABASE="$pytest_db"
  export DATABASE_URL
  DATABASE_URL=$(url_for "$pytest_db")
  sqitch deploy --quiet >/dev/null
  set +e
  .venv/bin/python -m pytest -q
  rc=$?
  set -e
  # pytest's exit 5 means it collected nothing: treat as a failure, an empty suite proves nothing.
  exit "$rc" ) || status=1

if [ "$status" -ne 0 ]; then
  printf '\nmake test: FAILED\n' >&2
fi
exit "$status"
