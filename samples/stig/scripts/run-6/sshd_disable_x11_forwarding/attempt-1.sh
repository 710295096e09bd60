#!/usr/bin/env bash
# Rule: sshd_disable_x11_forwarding
set -euo pipefail

CFG=/etc/ssh/sshd_config
cp -a "$CFG" "$CFG.bak.$(date -u +%Y%m%dT%H%M%SZ)"

# RHEL ships an active 'X11Forwarding yes' in the main file: change it there
if grep -qE '^\s*X11Forwarding\b' "$CFG"; then
  sed -i -E 's/^\s*X11Forwarding\b.*/X11Forwarding no/' "$CFG"
else
  echo 'X11Forwarding no' >> "$CFG"
fi

# a drop-in would win over the main file; stop if one still enables it
if grep -HiE '^\s*X11Forwarding\s+yes' /etc/ssh/sshd_config.d/*.conf 2>/dev/null; then
  echo "a drop-in still enables X11Forwarding" >&2
  exit 1
fi

sshd -t
systemctl reload sshd
[[ "$(sshd -T | awk '$1=="x11forwarding"{print $2}')" == no ]]
echo "X11Forwarding no"
