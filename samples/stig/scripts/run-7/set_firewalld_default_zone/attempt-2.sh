#!/usr/bin/env bash
# Rule: set_firewalld_default_zone  (attempt 2)
# Attempt 1 edited DefaultZone and reloaded: the evaluator's new SSH
# connections were dropped. Allow ssh in the drop zone first (permanent,
# then reload into runtime), switch the default zone only afterwards.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
ZONE=drop

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

systemctl is-active --quiet firewalld || die "firewalld not running"
tar -czf "/root/firewalld-${TS}.tar.gz" -C /etc firewalld

if ! firewall-cmd --permanent --zone="$ZONE" --query-service=ssh >/dev/null; then
  firewall-cmd -q --permanent --zone="$ZONE" --add-service=ssh
fi
firewall-cmd -q --reload

# runtime must allow ssh in the drop zone before anything moves there
firewall-cmd --zone="$ZONE" --query-service=ssh >/dev/null || die "ssh not active in ${ZONE}"

firewall-cmd -q --set-default-zone="$ZONE"

[[ "$(firewall-cmd --get-default-zone)" == "$ZONE" ]] || die "default zone not ${ZONE}"
grep -qx "DefaultZone=${ZONE}" /etc/firewalld/firewalld.conf || die "firewalld.conf not updated"
firewall-cmd --zone="$ZONE" --list-services
log "default zone ${ZONE}, ssh allowed (runtime and permanent)"
