# Sourced by the other scripts: points the libpq variables at the database ctxgraph uses.
# With DATABASE_URL set, that server; otherwise the embedded cluster (started if needed) and
# database "ctxgraph". After this, psql, sqitch, pg_prove and psycopg all reach the same server.
ctxgraph_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -n "${DATABASE_URL:-}" ]; then
  libpq_env=$(python3 "$ctxgraph_root/scripts/libpq-env.py") || exit 2
  eval "$libpq_env"
  export PGHOST PGPORT PGUSER PGPASSWORD PGDATABASE PGSSLMODE 2>/dev/null || true
  PGDATABASE=${PGDATABASE:-ctxgraph}
else
  "$ctxgraph_root/scripts/pg-local.sh" start
  eval "$("$ctxgraph_root/scripts/pg-local.sh" env)"
  PGDATABASE=ctxgraph
  unset PGPASSWORD PGSERVICE
  export DATABASE_URL="postgresql:///$PGDATABASE?host=$PGHOST&port=$PGPORT&user=$PGUSER"
fi
export PGHOST PGPORT PGUSER PGDATABASE
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"

# url_for DB: a DATABASE_URL for another database on the same server (libpq fills the rest from
# the variables above).
url_for() { printf 'postgresql:///%s\n' "$1"; }

# create_database DB / drop_database DB: throwaway databases on the same server.
create_database() { psql -X -q -d postgres -v ON_ERROR_STOP=1 -c "CREATE DATABASE \"$1\"" >/dev/null; }
drop_database() { psql -X -q -d postgres -c "DROP DATABASE IF EXISTS \"$1\" WITH (FORCE)" >/dev/null 2>&1 || true; }
