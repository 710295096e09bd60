#!/usr/bin/env bash
# Rule: sshd_set_idle_timeout
set -euo pipefail

DROPIN=/etc/ssh/sshd_config.d/00-stig.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"

install -d -m 0755 "$(dirname "$DROPIN")"
touch "$DROPIN"; chmod 0600 "$DROPIN"
cp -a "$DROPIN" "$DROPIN.bak.$TS"

for kv in "ClientAliveInterval 600" "ClientAliveCountMax 1"; do
  key="${kv%% *}"
  if grep -qiE "^\s*${key}\b" "$DROPIN"; then
    sed -i -E "s/^\s*${key}\b.*/${kv}/I" "$DROPIN"
  else
    echo "$kv" >> "$DROPIN"
  fi
done

# other drop-ins (cloud-init writes 50-cloud-init.conf) must not set these first
grep -HiE '^\s*ClientAlive' /etc/ssh/sshd_config.d/*.conf /etc/ssh/sshd_config || true

sshd -t
systemctl reload sshd

sshd -T | grep -iE '^clientalive(interval|countmax) ' | sort \
  | diff - <(printf 'clientalivecountmax 1\nclientaliveinterval 600\n')
echo "idle timeout: 600 s, 1 probe"
