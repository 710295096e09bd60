#!/usr/bin/env bash
# A local Citus cluster for the distributed deployment (docs/scaling.md): a coordinator and two
# workers, three PostgreSQL clusters under .pgdata/citus/ listening on 127.0.0.1 only, on their own
# ports (CTXGRAPH_CITUS_PORT, default 56001, and the next two). Needs Citus installed
# (`make provision-citus`). Usage: citus-local.sh start|stop|status|env|create-database NAME|drop-database NAME
#   start            initialise what is missing, start the three servers, join the workers
#   stop             stop the three servers (their data stays in .pgdata/citus/)
#   env              the libpq variables that reach the coordinator (as pg-local.sh env does)
#   create-database  a database on every node with the citus extension, the workers joined to it
#   drop-database    that database dropped on every node
# Citus does not propagate CREATE DATABASE, nor an extension created before the nodes are joined, so
# every database is made on each node first and joined on the coordinator after.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
base_port=${CTXGRAPH_CITUS_PORT:-56001}
nodes=(coordinator worker1 worker2)

die() { printf 'citus-local: error: %s\n' "$*" >&2; exit 1; }
log() { printf 'citus-local: %s\n' "$*" >&2; }

major=$(ls -1 /usr/lib/postgresql 2>/dev/null | grep -E '^[0-9]+$' | sort -n | tail -1 || true)
[ -n "$major" ] || die "no PostgreSQL server installed; run 'make provision' first"
bin="/usr/lib/postgresql/$major/bin"
[ -f "/usr/lib/postgresql/$major/lib/citus.so" ] || die "Citus is not installed for PostgreSQL $major; run 'make provision-citus'"

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# The clusters sit beside the embedded single node (pg-local.sh makes .pgdata, or its fallback).
"$root/scripts/pg-local.sh" env >/dev/null
data_dir="$(readlink -f "$root/.pgdata")/citus"

port_of() { local i; for i in "${!nodes[@]}"; do [ "${nodes[$i]}" = "$1" ] && echo $((base_port + i)); done; }
psql_on() { local node=$1; shift; PGOPTIONS="-c client_min_messages=warning" psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$(port_of "$node")" -U postgres "$@"; }
is_running() { as_owner "$bin/pg_ctl" -D "$data_dir/$1" status >/dev/null 2>&1; }

init_node() {
  local node=$1 dir="$data_dir/$1"
  [ -f "$dir/PG_VERSION" ] && return 0
  log "initdb $dir"
  as_owner mkdir -p "$dir"
  as_owner "$bin/initdb" -D "$dir" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null \
    || die "initdb of the $node failed"
  # Loopback only, trust on it: the nodes connect to each other as postgres without a password, and
  # nothing off this machine can reach them.
  cat >>"$dir/postgresql.conf" <<CONF
# ctxgraph's local Citus cluster: the $node, on 127.0.0.1 only.
listen_addresses = '127.0.0.1'
port = $(port_of "$node")
unix_socket_directories = ''
shared_preload_libraries = 'citus'
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 128MB
max_connections = 100
max_prepared_transactions = 100
CONF
  printf 'host all all 127.0.0.1/32 trust\n' | as_owner tee "$dir/pg_hba.conf" >/dev/null
}

start() {
  local node
  for node in "${nodes[@]}"; do
    init_node "$node"
    is_running "$node" && continue
    as_owner "$bin/pg_ctl" -D "$data_dir/$node" -l "$data_dir/$node.log" -w -t 60 start >/dev/null \
      || { tail -20 "$data_dir/$node.log" >&2; die "the $node did not start (log above)"; }
    log "$node started on 127.0.0.1 port $(port_of "$node")"
  done
  create_database ctxgraph
}

stop() {
  local node
  for node in "${nodes[@]}"; do
    if is_running "$node"; then
      as_owner "$bin/pg_ctl" -D "$data_dir/$node" -m fast -w stop >/dev/null
      log "$node stopped"
    fi
  done
}

create_database() {
  local db=$1 node
  [[ "$db" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "database name must be a plain identifier: $db"
  for node in "${nodes[@]}"; do
    if [ -z "$(psql_on "$node" -d postgres -Atc "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]; then
      psql_on "$node" -d postgres -c "CREATE DATABASE \"$db\"" >/dev/null
    fi
    psql_on "$node" -d "$db" -c "CREATE EXTENSION IF NOT EXISTS citus" >/dev/null
  done
  psql_on coordinator -d "$db" >/dev/null <<SQL
SELECT citus_set_coordinator_host('127.0.0.1', $(port_of coordinator));
SELECT citus_add_node('127.0.0.1', $(port_of worker1))
 WHERE NOT EXISTS (SELECT 1 FROM pg_dist_node WHERE nodeport = $(port_of worker1));
SELECT citus_add_node('127.0.0.1', $(port_of worker2))
 WHERE NOT EXISTS (SELECT 1 FROM pg_dist_node WHERE nodeport = $(port_of worker2));
SQL
}

drop_database() {
  local db=$1 node
  [[ "$db" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "database name must be a plain identifier: $db"
  for node in "${nodes[@]}"; do
    psql_on "$node" -d postgres -c "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" >/dev/null
  done
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status)
    down=0
    for node in "${nodes[@]}"; do
      if is_running "$node"; then echo "$node: running (port $(port_of "$node"))"; else echo "$node: stopped"; down=1; fi
    done
    [ "$down" -eq 0 ] || exit 3 ;;
  env) printf 'PGHOST=127.0.0.1\nPGPORT=%s\nPGUSER=postgres\n' "$(port_of coordinator)" ;;
  create-database) [ -n "${2:-}" ] || die "usage: $0 create-database NAME"; create_database "$2" ;;
  drop-database) [ -n "${2:-}" ] || die "usage: $0 drop-database NAME"; drop_database "$2" ;;
  *) die "usage: $0 start|stop|status|env|create-database NAME|drop-database NAME" ;;
esac
