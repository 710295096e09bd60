#!/usr/bin/env bash
# The embedded default: a project-local PostgreSQL cluster in .pgdata/ with its own socket folder
# and port, so ctxgraph never touches a system cluster. Usage: pg-local.sh start|stop|status|env
# `env` prints the libpq variables (PGHOST, PGPORT, PGUSER) that psql, sqitch and pg_prove honour.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
port=${CTXGRAPH_PGPORT:-54329}
data_link="$root/.pgdata"

die() { printf 'pg-local: error: %s\n' "$*" >&2; exit 1; }
log() { printf 'pg-local: %s\n' "$*" >&2; }

major=$(ls -1 /usr/lib/postgresql 2>/dev/null | grep -E '^[0-9]+$' | sort -n | tail -1 || true)
[ -n "$major" ] || die "no PostgreSQL server installed; run 'make provision' first"
bin="/usr/lib/postgresql/$major/bin"

# initdb and postgres refuse to run as root: as root we run them as the 'postgres' system user.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
owner_can_reach() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- test -w "$1"; else test -w "$1"; fi
}

# The cluster lives in .pgdata when the server's user can write there; a checkout under a private
# folder (mode 700, say) falls back to a folder under /var/tmp named after the checkout, and
# .pgdata becomes a link to it so every script still finds the cluster at one place.
resolve_data_dir() {
  if [ -L "$data_link" ]; then readlink -f "$data_link"; return; fi
  if [ -d "$data_link" ]; then echo "$data_link"; return; fi
  mkdir -p "$data_link"
  [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$data_link"
  if owner_can_reach "$data_link"; then echo "$data_link"; return; fi
  rmdir "$data_link"
  local alt
  alt="/var/tmp/ctxgraph-pg-$(printf '%s' "$root" | md5sum | cut -c1-12)"
  mkdir -p "$alt"
  [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$alt"
  ln -s "$alt" "$data_link"
  echo "$alt"
}

data_dir=$(resolve_data_dir)
cluster="$data_dir/cluster"
sock="$data_dir/run"

print_env() {
  printf 'PGHOST=%s\nPGPORT=%s\nPGUSER=postgres\n' "$sock" "$port"
}

is_running() { as_owner "$bin/pg_ctl" -D "$cluster" status >/dev/null 2>&1; }

start() {
  if [ ! -f "$cluster/PG_VERSION" ]; then
    log "initdb $cluster (PostgreSQL $major)"
    as_owner mkdir -p "$cluster" "$sock"
    as_owner "$bin/initdb" -D "$cluster" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null \
      || die "initdb failed"
    cat >>"$cluster/postgresql.conf" <<CONF
# ctxgraph's embedded cluster: local socket only, own port.
listen_addresses = ''
port = $port
unix_socket_directories = '$sock'
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 256MB
max_connections = 60
CONF
  fi
  # A socket path over 107 bytes cannot be bound; say so rather than fail obscurely.
  [ "${#sock}" -lt 100 ] || die "socket folder path too long: $sock"
  if is_running; then return 0; fi
  as_owner mkdir -p "$sock"
  as_owner "$bin/pg_ctl" -D "$cluster" -l "$data_dir/server.log" -w -t 60 start >/dev/null \
    || { tail -20 "$data_dir/server.log" >&2; die "server did not start (log above)"; }
  log "started on socket $sock port $port"
}

stop() {
  if is_running; then as_owner "$bin/pg_ctl" -D "$cluster" -m fast -w stop >/dev/null; log "stopped"; fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if is_running; then echo running; else echo stopped; exit 3; fi ;;
  env) print_env ;;
  *) die "usage: $0 start|stop|status|env" ;;
esac
