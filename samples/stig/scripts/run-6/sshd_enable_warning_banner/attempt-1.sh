#!/usr/bin/env bash
# Rule: sshd_enable_warning_banner
set -euo pipefail

DROPIN=/etc/ssh/sshd_config.d/00-stig.conf
touch "$DROPIN"; chmod 0600 "$DROPIN"
cp -a "$DROPIN" "$DROPIN.bak.$(date -u +%Y%m%dT%H%M%SZ)"

# network logins get the network banner file
if grep -qiE '^\s*Banner\b' "$DROPIN"; then
  sed -i -E 's|^\s*Banner\b.*|Banner /etc/issue.net|I' "$DROPIN"
else
  echo 'Banner /etc/issue.net' >> "$DROPIN"
fi
[[ -s /etc/issue.net ]] || cp /etc/issue /etc/issue.net

sshd -t
systemctl reload sshd
sshd -T | grep -i '^banner '
