#!/usr/bin/env bash
# The sqitch round trip on a database that holds data (called by run-tests.sh with the libpq
# variables set): deploy; seed; revert to just before DEF-27 and prove by checksum that only
# the three DEF-27 columns went; redeploy; retire two tips, revert to @v0.1.0 (no eviction) and
# prove they are active again, redeploy; add a skill, revert everything and prove nothing is left;
# deploy again and prove the schema is the same as the first time (every revert is the exact
# inverse of its deploy) and the skill can be added again.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fail() { printf 'roundtrip: FAILED: %s\n' "$*" >&2; exit 1; }
say() { printf 'roundtrip: %s\n' "$*"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

psql_q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
# \restrict lines carry a random key per dump; they say nothing about the schema.
dump_schema() { pg_dump --schema-only --no-owner --exclude-schema=sqitch "$PGDATABASE" | grep -v -E '^--|^$|^SET |^SELECT pg_catalog.set_config|^.(un)?restrict '; }
def27_columns() {
  psql_q -At -c "SELECT count(*) FROM information_schema.columns
                  WHERE column_name IN ('tip_followed_llm', 'tip_followed_emb', 'tip_followed_computed_at')
                    AND table_name = 'tip_retrievals'"
}

sqitch deploy --quiet >/dev/null
dump_schema >"$work/schema-first.sql"
psql_q -f tests/roundtrip/seed.sql >/dev/null
psql_q -At -f tests/roundtrip/checksum.sql >"$work/before.txt"
[ "$(def27_columns)" -eq 9 ] || fail "expected the DEF-27 columns on 3 tables before the revert"
psql_q -At -c "SELECT count(*) FROM stig.tip_retrievals WHERE tip_followed_computed_at IS NOT NULL" | grep -qx 5 \
  || fail "seed did not fill the DEF-27 columns"

sqitch revert --quiet -y --to def27_tip_followed^ >/dev/null
[ "$(def27_columns)" -eq 0 ] || fail "DEF-27 columns still present after revert"
psql_q -At -f tests/roundtrip/checksum.sql >"$work/after-revert.txt"
diff -u "$work/before.txt" "$work/after-revert.txt" || fail "reverting DEF-27 changed other data"
say "revert to before DEF-27: 3 columns dropped, $(wc -l <"$work/before.txt") tables unchanged by checksum"

sqitch deploy --quiet >/dev/null
[ "$(def27_columns)" -eq 9 ] || fail "DEF-27 columns missing after redeploy"
psql_q -At -f tests/roundtrip/checksum.sql >"$work/after-redeploy.txt"
diff -u "$work/before.txt" "$work/after-redeploy.txt" || fail "redeploy changed data"
say "redeploy: columns back, data unchanged"

# Two tips retired by eviction. @v0.1.0 has no eviction: nothing there shows or undoes a
# retirement, so reverting to it must hand the tips back active, and redeploying keeps them so.
psql_q -c "WITH t AS (SELECT id FROM stig.tips ORDER BY id LIMIT 2),
                r AS (UPDATE stig.tips SET retired_at = '2026-11-20 00:00+00' WHERE id IN (SELECT id FROM t))
           INSERT INTO ctxgraph.tip_evictions (skill, tip_id, retired_at, reason, evidence)
           SELECT 'stig', id, '2026-11-20 00:00+00', 'roundtrip', '{}' FROM t" >/dev/null
sqitch revert --quiet -y --to @v0.1.0 >/dev/null
retired=$(psql_q -At -c "SELECT count(*) FROM stig.tips WHERE retired_at IS NOT NULL")
[ "$retired" -eq 0 ] || fail "reverting to @v0.1.0 left $retired tips retired with no eviction to undo it"
sqitch deploy --quiet >/dev/null
psql_q -At -f tests/roundtrip/checksum.sql >"$work/after-v010.txt"
diff -u "$work/before.txt" "$work/after-v010.txt" || fail "revert to @v0.1.0 and redeploy changed data"
say "revert to @v0.1.0: retired tips handed back active; redeploy: data unchanged"

# A skill added with add_skill goes with the full revert, like stig and cve, so that a deploy
# after it can add it again.
psql_q -c "SELECT ctxgraph.add_skill('roundtrip_extra', 'binary')" >/dev/null
sqitch revert --quiet -y >/dev/null
left=$(psql_q -At -c "SELECT count(*) FROM pg_namespace WHERE nspname IN ('ctxgraph', 'stig', 'cve', 'roundtrip_extra')")
[ "$left" -eq 0 ] || fail "full revert left $left schemas behind"
sqitch deploy --quiet >/dev/null
dump_schema >"$work/schema-again.sql"
diff -u "$work/schema-first.sql" "$work/schema-again.sql" || fail "schema after revert + deploy differs from the first deploy"
psql_q -c "SELECT ctxgraph.add_skill('roundtrip_extra', 'binary'); SELECT ctxgraph.drop_skill('roundtrip_extra')" >/dev/null \
  || fail "add_skill of a skill the full revert removed failed"
say "full revert left nothing, an added skill included; deploy again gives the same schema ($(wc -l <"$work/schema-first.sql") lines of DDL)"
