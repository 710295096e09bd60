#!/usr/bin/env bash
# Rule: sshd_set_idle_timeout
# Idle sessions are dropped after 600 s without client response.
set -euo pipefail

DROPIN=/etc/ssh/sshd_config.d/00-stig.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"

set_opt() {
  local key="$1" value="$2"
  if grep -qiE "^\s*${key}\b" "$DROPIN"; then
    sed -i -E "s/^\s*${key}\b.*/${key} ${value}/I" "$DROPIN"
  else
    printf '%s %s\n' "$key" "$value" >> "$DROPIN"
  fi
}

install -d -m 0755 /etc/ssh/sshd_config.d
touch "$DROPIN"; chmod 0600 "$DROPIN"
cp -a "$DROPIN" "${DROPIN}.bak.${TS}"

set_opt ClientAliveInterval 600
# CountMax 0: cut the session exactly at the interval, no extra probes
set_opt ClientAliveCountMax 0

sshd -t
systemctl reload sshd

# effective values (an earlier drop-in would win)
interval="$(sshd -T | awk '$1 == "clientaliveinterval" {print $2}')"
countmax="$(sshd -T | awk '$1 == "clientalivecountmax" {print $2}')"
echo "ClientAliveInterval=${interval} ClientAliveCountMax=${countmax}"
[[ "$interval" == 600 && "$countmax" == 0 ]]
