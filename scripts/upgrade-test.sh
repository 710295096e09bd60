#!/usr/bin/env bash
# The upgrade test (called by run-tests.sh with the libpq variables set): for every released tag,
# a database deployed from the commit that introduced the tag line (a git worktree of it), holding
# data, is then deployed to the end by this checkout. It must end with the same schema as a fresh
# deploy (normalised dump), keep every row it held, and pass sqitch verify. A tag with an upgrade
# note in sql/upgrade/before-<tag-after>.sql gets that step first, as docs/operations.md tells users.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/db-env.sh >/dev/null
fail() { printf 'upgrade: FAILED: %s\n' "$*" >&2; exit 1; }
say() { printf 'upgrade: %s\n' "$*"; }
work=$(mktemp -d)
dbs=()
cleanup() {
  for db in "${dbs[@]}"; do drop_database "$db"; done
  for wt in "$work"/wt-*; do [ -d "$wt" ] && git worktree remove --force "$wt" >/dev/null 2>&1; done
  rm -rf "$work"
}
trap cleanup EXIT

psql_q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
# \restrict lines carry a random key per dump; they say nothing about the schema.
dump_schema() { pg_dump --schema-only --no-owner --exclude-schema=sqitch "$1" | grep -v -E '^--|^$|^SET |^SELECT pg_catalog.set_config|^.(un)?restrict '; }
# Every row of the user-data tables (each skill partition, the registries, the parameters), one
# line each as JSON without its NULL values, sorted: an upgrade may add rows (a new parameter) and
# columns that start NULL (follow_probability), but not change or drop a value.
table_rows() {
  psql_q -d "$1" -At <<'SQL' | LC_ALL=C sort
SELECT format($q$SELECT %L || ' ' || jsonb_strip_nulls(to_jsonb(t))::text FROM %s AS t$q$, tab, tab)
  FROM (SELECT i.inhrelid::regclass::text AS tab
          FROM pg_catalog.pg_inherits AS i
         WHERE i.inhparent IN ('ctxgraph.runs'::regclass, 'ctxgraph.attempts'::regclass,
                               'ctxgraph.tips'::regclass, 'ctxgraph.tip_retrievals'::regclass)
        UNION ALL VALUES ('ctxgraph.skills'), ('ctxgraph.parameters'), ('ctxgraph.failure_modes')) AS tables
 ORDER BY tab
\gexec
SQL
}
# Sets $db (not echoed: a $(...) subshell would lose the name that cleanup must drop).
new_db() { db="ctxgraph_upgrade_$1_$$"; dbs+=("$db"); drop_database "$db"; create_database "$db"; }

new_db fresh; fresh=$db
PGDATABASE=$fresh sqitch deploy --quiet >/dev/null
dump_schema "$fresh" >"$work/fresh.sql"

mapfile -t tags < <(grep -E '^@' sqitch.plan | awk '{print $1}')
[ "${#tags[@]}" -gt 0 ] || fail "no tag in sqitch.plan"
for i in "${!tags[@]}"; do
  tag=${tags[$i]}
  line=$(grep -E "^$tag " sqitch.plan)
  commit=$(git log --format=%H -S"$line" -- sqitch.plan | tail -1)
  if [ -z "$commit" ]; then say "$tag: not committed yet, skipped"; continue; fi
  name=${tag#@}; name=${name//./_}
  wt="$work/wt-$name"
  git worktree add --detach "$wt" "$commit" >/dev/null 2>&1 || fail "$tag: cannot check out $commit"
  new_db "$name"
  ( cd "$wt" && PGDATABASE=$db sqitch deploy --quiet >/dev/null ) || fail "$tag: deploy at ${commit:0:8} failed"
  PGDATABASE=$db psql_q -f tests/roundtrip/seed.sql >/dev/null || fail "$tag: seeding failed"
  table_rows "$db" >"$work/$name-before.txt"
  next=${tags[$((i + 1))]:-}
  note="sql/upgrade/before-${next#@}.sql"
  if [ -n "$next" ] && [ -f "$note" ]; then
    PGDATABASE=$db psql_q -f "$note" >/dev/null || fail "$tag: $note failed"
  fi
  PGDATABASE=$db sqitch deploy --quiet >/dev/null || fail "$tag: deploying this checkout on top failed"
  dump_schema "$db" >"$work/$name-upgraded.sql"
  diff -u "$work/fresh.sql" "$work/$name-upgraded.sql" >&2 || fail "$tag: schema after the upgrade differs from a fresh deploy"
  table_rows "$db" >"$work/$name-after.txt"
  lost=$(LC_ALL=C comm -23 "$work/$name-before.txt" "$work/$name-after.txt")
  [ -z "$lost" ] || { printf '%s\n' "$lost" >&2; fail "$tag: the upgrade changed or lost the rows above"; }
  PGDATABASE=$db sqitch verify >/dev/null 2>&1 || fail "$tag: sqitch verify failed after the upgrade"
  say "$tag (${commit:0:8}) -> this checkout: same schema as a fresh deploy ($(wc -l <"$work/fresh.sql") lines), all $(wc -l <"$work/$name-before.txt") rows kept, verify ok"
done
