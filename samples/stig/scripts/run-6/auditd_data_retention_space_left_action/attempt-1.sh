#!/usr/bin/env bash
# Rule: auditd_data_retention_space_left_action
set -euo pipefail

CONF=/etc/audit/auditd.conf
cp -a "$CONF" "$CONF.bak.$(date -u +%Y%m%dT%H%M%SZ)"

set_conf() {
  local key="$1" value="$2"
  if grep -qE "^\s*${key}\s*=" "$CONF"; then
    sed -i -E "s|^\s*${key}\s*=.*|${key} = ${value}|" "$CONF"
  else
    echo "${key} = ${value}" >> "$CONF"
  fi
}

set_conf space_left_action email
set_conf action_mail_acct root

# systemctl refuses to restart auditd (RefuseManualStop=yes)
service auditd restart
sleep 2
auditctl -s | grep '^enabled'
grep -E '^(space_left_action|action_mail_acct)\s*=' "$CONF"
