#!/usr/bin/env bash
# Rule: aide_build_database
# Install AIDE if needed, keep volatile paths out of the database, build the
# baseline and put it where aide --check (and the scanner) expect it.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
CONF=/etc/aide.conf
DB=/var/lib/aide/aide.db.gz
NEW=/var/lib/aide/aide.db.new.gz
EXCLUDES=(
  '!/var/log/journal'
  '!/var/lib/sss/db'
  '!/var/lib/dnf'
  '!/var/cache'
  '!/var/spool/postfix'
)

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

ensure_package() {
  local pkg="$1"
  if rpm -q "$pkg" >/dev/null 2>&1; then
    log "$pkg already installed"
    return 0
  fi
  dnf -y --setopt=timeout=30 --setopt=retries=2 install "$pkg" \
    || die "could not install $pkg"
}

add_exclude() {
  local rule="$1"
  if grep -qxF -- "$rule" "$CONF"; then
    return 0
  fi
  printf '%s\n' "$rule" >> "$CONF"
  log "excluded ${rule#!}"
}

ensure_package aide
[[ -f "$CONF" ]] || die "$CONF missing"

# the database of a full root filesystem needs some room
avail_kb="$(df -Pk /var/lib/aide | awk 'NR==2 {print $4}')"
(( avail_kb > 204800 )) || die "less than 200 MB free under /var/lib/aide"

# 1. exclusions (appended once, kept together at the end of the file)
cp -a "$CONF" "${CONF}.bak.${TS}"
if ! grep -q '^# STIG remediation: volatile paths' "$CONF"; then
  printf '\n# STIG remediation: volatile paths excluded (%s)\n' "$TS" >> "$CONF"
fi
for rule in "${EXCLUDES[@]}"; do
  add_exclude "$rule"
done
log "config now has $(grep -c '^!' "$CONF") exclusion rules"

# aide refuses to run with a broken config; check before the long init
aide --config-check >/dev/null || {
  cp -a "${CONF}.bak.${TS}" "$CONF"
  die "aide --config-check failed; config restored"
}

# 2. baseline
if [[ -f "$DB" ]]; then cp -a "$DB" "${DB}.bak.${TS}"; fi
log "building AIDE database (takes a few minutes)"
nice -n 10 aide --init >/dev/null

# 3. aide --init writes the .new file; the check uses aide.db.gz
[[ -s "$NEW" ]] || die "aide --init produced no $NEW"
mv -f "$NEW" "$DB"
chown root:root "$DB"
chmod 0600 "$DB"

# 4. verify: a check right after init should report no errors
rc=0
aide --check >/dev/null || rc=$?
if (( rc >= 14 )); then
  die "aide --check error (exit $rc)"
fi
log "aide --check exit ${rc} (0-7 = differences only)"
ls -l "$DB" >&2
log "AIDE baseline at ${DB}"
