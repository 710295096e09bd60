#!/usr/bin/env bash
# Rule: mount_option_tmp_noexec  (attempt 3)
# The scanner reads /etc/fstab; systemd turns the fstab line into tmp.mount.
set -euo pipefail

FSTAB=/etc/fstab
LINE='tmpfs   /tmp    tmpfs   defaults,mode=1777,nodev,nosuid,noexec   0 0'
cp -a "$FSTAB" "$FSTAB.bak.$(date -u +%Y%m%dT%H%M%SZ)"

if awk '$1 !~ /^#/ && $2 == "/tmp" {found=1} END {exit !found}' "$FSTAB"; then
  awk -v line="$LINE" '$1 !~ /^#/ && $2 == "/tmp" {print line; next} {print}' "$FSTAB" > "$FSTAB.new"
  mv -f "$FSTAB.new" "$FSTAB"
else
  echo "$LINE" >> "$FSTAB"
fi

systemctl daemon-reload
findmnt --verify --tab-file "$FSTAB"
grep -E '\s/tmp\s' "$FSTAB"
