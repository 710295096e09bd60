#!/usr/bin/env bash
# Rule: sshd_enable_warning_banner  (attempt 2)
# The check expects sshd to show /etc/issue (the DoD notice), not issue.net.
set -euo pipefail

DROPIN=/etc/ssh/sshd_config.d/00-stig.conf
touch "$DROPIN"; chmod 0600 "$DROPIN"
cp -a "$DROPIN" "$DROPIN.bak.$(date -u +%Y%m%dT%H%M%SZ)"

if grep -qiE '^\s*Banner\b' "$DROPIN"; then
  sed -i -E 's|^\s*Banner\b.*|Banner /etc/issue|I' "$DROPIN"
else
  echo 'Banner /etc/issue' >> "$DROPIN"
fi

sshd -t
systemctl reload sshd
[[ "$(sshd -T | awk '$1=="banner"{print $2}')" == /etc/issue ]]
echo "sshd banner: /etc/issue"
