#!/usr/bin/env bash
# Rule: sshd_disable_x11_forwarding
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
CFG=/etc/ssh/sshd_config
DROPIN=/etc/ssh/sshd_config.d/00-stig.conf

cp -a "$CFG" "${CFG}.bak.${TS}"
# 1. the shipped 'X11Forwarding yes' in the main file, changed in place
sed -i -E 's/^\s*X11Forwarding\s+yes\b.*/X11Forwarding no/' "$CFG"

# 2. same value in the early drop-in so an sshd_config.rpmnew can't undo it
install -d -m 0755 "$(dirname "$DROPIN")"
touch "$DROPIN"; chmod 0600 "$DROPIN"
if grep -qiE '^\s*X11Forwarding\b' "$DROPIN"; then
  sed -i -E 's/^\s*X11Forwarding\b.*/X11Forwarding no/I' "$DROPIN"
else
  echo 'X11Forwarding no' >> "$DROPIN"
fi

# 3. headless server: without xauth, forwarding cannot work at all
if rpm -q xorg-x11-xauth >/dev/null 2>&1; then
  dnf -y remove xorg-x11-xauth
fi

sshd -t
systemctl reload sshd
[[ "$(sshd -T | awk '$1=="x11forwarding"{print $2}')" == no ]]
if rpm -q xorg-x11-xauth >/dev/null 2>&1; then
  echo "xorg-x11-xauth still installed" >&2; exit 1
fi
echo "X11 forwarding disabled; xauth removed"
