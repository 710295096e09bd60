#!/usr/bin/env bash
# Rule: set_firewalld_default_zone  (attempt 2)
# Switch the default zone to drop without cutting off management access:
# ssh (and the management network) are allowed in the drop zone
# permanently AND at runtime before the default zone changes. Attempt 1
# switched first and only added ssh to the permanent config.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
TARGET_ZONE=drop
MGMT_NET="${MGMT_NET:-10.20.0.0/24}"

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

fw() { firewall-cmd -q "$@"; }

ensure_service() {
  local zone="$1" svc="$2"
  if ! firewall-cmd --permanent --zone="$zone" --query-service="$svc" >/dev/null; then
    fw --permanent --zone="$zone" --add-service="$svc"
    log "permanent: added service ${svc} to ${zone}"
  fi
}

ensure_mgmt_rule() {
  local zone="$1" src="$2"
  local rule="rule family=ipv4 source address=${src} service name=ssh accept"
  if ! firewall-cmd --permanent --zone="$zone" --query-rich-rule="$rule" >/dev/null; then
    fw --permanent --zone="$zone" --add-rich-rule="$rule"
    log "permanent: ssh from ${src} accepted in ${zone}"
  fi
}

systemctl is-active --quiet firewalld || die "firewalld is not running"

tar -czf "/root/firewalld-${TS}.tar.gz" -C /etc firewalld
log "saved /etc/firewalld to /root/firewalld-${TS}.tar.gz"

# If any step fails, put the saved configuration back and reload it, so
# the host keeps the zone it had (and the evaluator keeps its session).
rollback() {
  log "restoring /etc/firewalld from /root/firewalld-${TS}.tar.gz"
  tar -xzf "/root/firewalld-${TS}.tar.gz" -C /etc
  firewall-cmd -q --reload || systemctl restart firewalld
}
trap 'rc=$?; if (( rc != 0 )); then rollback; fi' EXIT

current="$(firewall-cmd --get-default-zone)"
log "current default zone: ${current}"

# interfaces explicitly bound to the old zone would stay there
bound="$(firewall-cmd --zone="$current" --list-interfaces)"
if [[ -n "$bound" ]]; then log "interfaces bound to ${current}: ${bound}"; fi

# 1. allow management access in the target zone (permanent)
ensure_service "$TARGET_ZONE" ssh
ensure_mgmt_rule "$TARGET_ZONE" "$MGMT_NET"

# 2. load the permanent config into runtime while still in the old zone
fw --reload
firewall-cmd --zone="$TARGET_ZONE" --query-service=ssh >/dev/null \
  || die "ssh not allowed in ${TARGET_ZONE} at runtime after reload"

# 3. only now switch the default zone (runtime + permanent)
if [[ "$current" != "$TARGET_ZONE" ]]; then
  fw --set-default-zone="$TARGET_ZONE"
fi

# 4. move explicitly bound interfaces as well
for ifc in $bound; do
  fw --permanent --zone="$TARGET_ZONE" --change-interface="$ifc"
  fw --zone="$TARGET_ZONE" --change-interface="$ifc"
  log "moved ${ifc} to ${TARGET_ZONE}"
done

# 5. verify runtime and permanent state agree
[[ "$(firewall-cmd --get-default-zone)" == "$TARGET_ZONE" ]] || die "default zone is not ${TARGET_ZONE}"
grep -qE "^DefaultZone=${TARGET_ZONE}$" /etc/firewalld/firewalld.conf || die "firewalld.conf not updated"
firewall-cmd --permanent --zone="$TARGET_ZONE" --query-service=ssh >/dev/null || die "ssh missing (permanent)"
firewall-cmd --zone="$TARGET_ZONE" --query-service=ssh >/dev/null || die "ssh missing (runtime)"
firewall-cmd --check-config >/dev/null || die "firewall-cmd --check-config reports errors"
log "default zone ${TARGET_ZONE}; ssh allowed; management net ${MGMT_NET}"
