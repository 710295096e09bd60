#!/usr/bin/env bash
# Rule: auditd_data_retention_space_left_action
set -euo pipefail

CONF=/etc/audit/auditd.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"
cp -a "$CONF" "${CONF}.bak.${TS}"

set_conf() {
  local key="$1" value="$2"
  if grep -qE "^\s*${key}\s*=" "$CONF"; then
    sed -i -E "s|^\s*${key}\s*=.*|${key} = ${value}|" "$CONF"
  else
    echo "${key} = ${value}" >> "$CONF"
  fi
}

# warn the admin by mail when free space drops below a quarter of the volume
set_conf space_left 25%
set_conf space_left_action email
set_conf action_mail_acct root

# auditd refuses 'systemctl restart'; the service wrapper works
service auditd restart
sleep 2
auditctl -s | grep '^enabled'
grep -E '^(space_left|space_left_action|action_mail_acct)\s*=' "$CONF"
