#!/usr/bin/env bash
# Rule: mount_option_tmp_noexec
# /tmp is systemd's tmp.mount. Two places: the fstab line the scanner reads,
# and the unit's own options, applied by restarting the unit.
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

install -d -m 0755 /etc/systemd/system/tmp.mount.d
cat > /etc/systemd/system/tmp.mount.d/options.conf <<'EOF'
[Mount]
Options=mode=1777,strictatime,nosuid,nodev,noexec,size=50%%,nr_inodes=1m
EOF

systemctl daemon-reload
systemctl restart tmp.mount
findmnt -n -o OPTIONS /tmp | tr ',' '\n' | grep -x noexec
