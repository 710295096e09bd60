#!/usr/bin/env bash
# Installs the system packages ctxgraph needs: PostgreSQL server and headers, pgvector, pgTAP,
# sqitch and pg_prove. Safe to run again: it installs only what is missing.
# pgvector comes from apt where the distribution carries it (Debian 13+); Debian 12 has no
# package, so we build Debian's own source package from trixie against the installed server.
# With --citus it also builds and installs Citus (the distributed deployment, docs/scaling.md) from
# the vendored source next to the project (../shared/vendor/citus, or CTXGRAPH_CITUS_SRC), once.
set -euo pipefail

with_citus=0
[ "${1:-}" = "--citus" ] && with_citus=1

log() { printf 'provision: %s\n' "$*" >&2; }
die() { printf 'provision: error: %s\n' "$*" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || die "run as root or install sudo: apt-get needs root"
  SUDO="sudo"
fi

apt_updated=0
apt_update_once() {
  if [ "$apt_updated" -eq 0 ]; then
    log "apt-get update"
    $SUDO apt-get update -qq || die "apt-get update failed (no access to Debian's archive?)"
    apt_updated=1
  fi
}

is_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

apt_install() {
  local missing=()
  for pkg in "$@"; do is_installed "$pkg" || missing+=("$pkg"); done
  [ "${#missing[@]}" -eq 0 ] && return 0
  apt_update_once
  log "apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    || die "could not install: ${missing[*]}"
}

apt_has() { apt_update_once; apt-cache show "$1" >/dev/null 2>&1; }

# --- PostgreSQL server ------------------------------------------------------------------------
pg_major() {
  # The newest server major installed under /usr/lib/postgresql.
  ls -1 /usr/lib/postgresql 2>/dev/null | grep -E '^[0-9]+$' | sort -n | tail -1
}

major=$(pg_major || true)
if [ -z "$major" ] || [ ! -x "/usr/lib/postgresql/$major/bin/postgres" ]; then
  apt_install postgresql
  major=$(pg_major)
fi
[ -n "$major" ] || die "no PostgreSQL server found after installing 'postgresql'"
log "PostgreSQL major version $major"

apt_install "postgresql-$major" "postgresql-client-$major" "postgresql-server-dev-$major" \
  "postgresql-$major-pgtap" sqitch libtap-parser-sourcehandler-pgtap-perl libdbd-pg-perl \
  make gcc dpkg-dev
# chromium: headless browser for the HTML audit page's render test (tests/test_html_report.py).
apt_install chromium

# --- pgvector ---------------------------------------------------------------------------------
pgvector_present() { [ -f "/usr/share/postgresql/$major/extension/vector.control" ]; }

if ! pgvector_present; then
  if apt_has "postgresql-$major-pgvector"; then
    apt_install "postgresql-$major-pgvector"
  else
    log "no postgresql-$major-pgvector in apt: building Debian's pgvector source package"
    src_list=/etc/apt/sources.list.d/ctxgraph-trixie-src.sources
    if [ ! -f "$src_list" ]; then
      $SUDO tee "$src_list" >/dev/null <<'SRC'
# Added by ctxgraph's provisioning: source packages only, to build pgvector on releases without it.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
      apt_updated=0
    fi
    apt_update_once
    build=$(mktemp -d)
    trap 'rm -rf "$build"' EXIT
    ( cd "$build" && apt-get source -qq pgvector >/dev/null 2>&1 ) \
      || die "apt-get source pgvector failed (is the trixie deb-src entry reachable?)"
    srcdir=$(find "$build" -maxdepth 1 -mindepth 1 -type d -name 'pgvector-*' | head -1)
    [ -n "$srcdir" ] || die "pgvector source folder not found after apt-get source"
    # OPTFLAGS= drops -march=native so the build runs on any machine of this architecture.
    make -s -C "$srcdir" PG_CONFIG="/usr/lib/postgresql/$major/bin/pg_config" OPTFLAGS="" >/dev/null \
      || die "pgvector build failed"
    $SUDO make -s -C "$srcdir" PG_CONFIG="/usr/lib/postgresql/$major/bin/pg_config" OPTFLAGS="" install >/dev/null \
      || die "pgvector install failed"
  fi
fi
pgvector_present || die "pgvector is still missing for PostgreSQL $major"
log "system packages ready (PostgreSQL $major, pgvector, pgTAP, sqitch, pg_prove)"

# --- Citus (only with --citus) ------------------------------------------------------------------
# No registry these machines reach carries Citus, so it is built from the vendored release source
# with the patch PostgreSQL 15.20 needs (the README beside them says why). Skipped when this very
# version is installed for the server.
citus_version=13.2.2
citus_present() {
  [ -f "/usr/lib/postgresql/$major/lib/citus.so" ] \
    && grep -q "default_version = '${citus_version%.*}-" "/usr/share/postgresql/$major/extension/citus.control" 2>/dev/null
}
if [ "$with_citus" -eq 1 ]; then
  if citus_present; then
    log "Citus $citus_version already installed for PostgreSQL $major"
  else
    root=$(cd "$(dirname "$0")/.." && pwd)
    vendor=${CTXGRAPH_CITUS_SRC:-$root/../shared/vendor/citus}
    tarball="$vendor/citus-$citus_version.tar.gz"
    [ -f "$tarball" ] || die "Citus source not found: $tarball (set CTXGRAPH_CITUS_SRC to the folder holding it)"
    apt_install libcurl4-openssl-dev liblz4-dev libzstd-dev libkrb5-dev
    citus_build=$(mktemp -d)
    trap 'rm -rf "$citus_build" "${build:-}"' EXIT
    tar -xzf "$tarball" -C "$citus_build"
    citus_src="$citus_build/citus-$citus_version"
    for fix in "$vendor"/*.patch; do
      [ -f "$fix" ] || continue
      patch -s -d "$citus_src" -p1 <"$fix" || die "applying $(basename "$fix") to Citus $citus_version failed"
    done
    log "building Citus $citus_version for PostgreSQL $major (a minute or two)"
    ( cd "$citus_src" && ./configure -q PG_CONFIG="/usr/lib/postgresql/$major/bin/pg_config" >/dev/null \
        && make -s -j"$(nproc)" >/dev/null 2>&1 ) || die "Citus build failed (run it by hand in $citus_src to see why)"
    # Citus's Makefile redefines pgxs's check target; make says so on every run, which is noise here.
    $SUDO make -s -C "$citus_src" install >/dev/null 2> >(grep -v -E "(overriding|ignoring old) recipe" >&2) \
      || die "Citus install failed"
    citus_present || die "Citus $citus_version is still missing for PostgreSQL $major"
    log "Citus $citus_version installed"
  fi
fi
