#!/usr/bin/env bash
# Rule: grub2_audit_argument  (attempt 2)
# grub.cfg on this host only calls blscfg; the kernel command lines live in
# /boot/loader/entries. grubby edits those, /etc/default/grub covers
# kernels installed later.
set -euo pipefail

DEFAULT_GRUB=/etc/default/grub
cp -a "$DEFAULT_GRUB" "$DEFAULT_GRUB.bak.$(date -u +%Y%m%dT%H%M%SZ)"

grubby --update-kernel=ALL --args=audit=1

if ! grep -qE '^GRUB_CMDLINE_LINUX=.*\baudit=1\b' "$DEFAULT_GRUB"; then
  sed -i -E 's/^(GRUB_CMDLINE_LINUX="[^"]*)"/\1 audit=1"/' "$DEFAULT_GRUB"
fi

missing=0
while IFS= read -r args; do
  [[ "$args" == *audit=1* ]] || missing=$((missing + 1))
done < <(grubby --info=ALL | sed -n 's/^args="\(.*\)"$/\1/p')
(( missing == 0 )) || { echo "$missing entries lack audit=1" >&2; exit 1; }
grep -E '^GRUB_CMDLINE_LINUX=' "$DEFAULT_GRUB"
