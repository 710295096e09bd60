#!/usr/bin/env bash
# Rule: service_kdump_disabled
set -euo pipefail

systemctl disable --now kdump.service
systemctl mask kdump.service

# with kdump off the crashkernel reservation is wasted memory
if grubby --info=ALL | grep -q 'crashkernel='; then
  cp -a /etc/default/grub "/etc/default/grub.bak.$(date -u +%Y%m%dT%H%M%SZ)"
  grubby --update-kernel=ALL --remove-args=crashkernel
  sed -i -E 's/[[:space:]]*crashkernel=[^[:space:]"]+//' /etc/default/grub
fi

[[ "$(systemctl is-enabled kdump.service 2>/dev/null || true)" == masked ]]
if systemctl is-active --quiet kdump.service; then
  echo "kdump still active" >&2; exit 1
fi
echo "kdump disabled and masked"
