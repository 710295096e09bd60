#!/usr/bin/env bash
# Rule: sshd_set_idle_timeout  (attempt 2)
# The evaluator rejected ClientAliveCountMax 0: the current STIG wants 1.
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
set_opt ClientAliveCountMax 1

sshd -t
systemctl reload sshd

interval="$(sshd -T | awk '$1 == "clientaliveinterval" {print $2}')"
countmax="$(sshd -T | awk '$1 == "clientalivecountmax" {print $2}')"
echo "ClientAliveInterval=${interval} ClientAliveCountMax=${countmax}"
[[ "$interval" == 600 && "$countmax" == 1 ]]
