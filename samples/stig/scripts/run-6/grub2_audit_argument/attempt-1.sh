#!/usr/bin/env bash
# Rule: grub2_audit_argument
set -euo pipefail

DEFAULT_GRUB=/etc/default/grub
cp -a "$DEFAULT_GRUB" "$DEFAULT_GRUB.bak.$(date -u +%Y%m%dT%H%M%SZ)"

# existing BLS boot entries
grubby --update-kernel=ALL --args=audit=1

# kernels installed later take GRUB_CMDLINE_LINUX
if ! grep -qE '^GRUB_CMDLINE_LINUX=.*\baudit=1\b' "$DEFAULT_GRUB"; then
  sed -i -E 's/^(GRUB_CMDLINE_LINUX="[^"]*)"/\1 audit=1"/' "$DEFAULT_GRUB"
fi

grep -E '^GRUB_CMDLINE_LINUX=' "$DEFAULT_GRUB"
missing="$(grubby --info=ALL | awk '/^args=/ && !/audit=1/' | wc -l)"
[[ "$missing" -eq 0 ]] || { echo "$missing boot entries without audit=1" >&2; exit 1; }
echo "audit=1 set for all kernels (active after reboot)"
