#!/usr/bin/env bash
# Rule: mount_option_tmp_noexec  (attempt 2)
# Restarting tmp.mount fails while /tmp is in use. Keep the fstab entry and
# remount the live /tmp in place instead.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
FSTAB=/etc/fstab
LINE='tmpfs   /tmp    tmpfs   defaults,mode=1777,nodev,nosuid,noexec   0 0'

cp -a "$FSTAB" "${FSTAB}.bak.${TS}"
if awk '$1 !~ /^#/ && $2 == "/tmp" {f=1} END {exit !f}' "$FSTAB"; then
  awk -v line="$LINE" '$1 !~ /^#/ && $2 == "/tmp" {print line; next} {print}' "$FSTAB" > "${FSTAB}.new"
  mv -f "${FSTAB}.new" "$FSTAB"
else
  echo "$LINE" >> "$FSTAB"
fi
findmnt --verify --tab-file "$FSTAB"
systemctl daemon-reload

mount -o remount,nodev,nosuid,noexec /tmp

opts="$(findmnt -n -o OPTIONS /tmp)"
for o in nodev nosuid noexec; do
  [[ ",${opts}," == *",${o},"* ]] || { echo "/tmp lacks ${o}: ${opts}" >&2; exit 1; }
done
echo "/tmp: ${opts}"
