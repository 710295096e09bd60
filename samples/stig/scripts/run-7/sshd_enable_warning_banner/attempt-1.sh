#!/usr/bin/env bash
# Rule: sshd_enable_warning_banner
set -euo pipefail

DROPIN=/etc/ssh/sshd_config.d/00-stig.conf
install -d -m 0755 /etc/ssh/sshd_config.d
touch "$DROPIN"; chmod 0600 "$DROPIN"
cp -a "$DROPIN" "$DROPIN.bak.$(date -u +%Y%m%dT%H%M%SZ)"

if grep -qiE '^\s*Banner\b' "$DROPIN"; then
  sed -i -E 's|^\s*Banner\b.*|Banner /etc/issue|I' "$DROPIN"
else
  echo 'Banner /etc/issue' >> "$DROPIN"
fi

# restart so the scanner sees it; the unit validates the config itself
systemctl restart sshd
systemctl is-active --quiet sshd
grep -i '^Banner' "$DROPIN"
