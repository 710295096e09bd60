#!/usr/bin/env bash
# Rule: mount_option_tmp_noexec  (attempt 2)
# /tmp comes from systemd's tmp.mount: set the options on the unit so they
# persist, and restart the unit to apply them.
set -euo pipefail

DIR=/etc/systemd/system/tmp.mount.d
install -d -m 0755 "$DIR"
cat > "$DIR/50-stig-options.conf" <<'EOF'
[Mount]
Options=mode=1777,strictatime,nosuid,nodev,noexec,size=50%%,nr_inodes=1m
EOF

systemctl daemon-reload
systemctl restart tmp.mount
findmnt -n -o OPTIONS /tmp | grep -q noexec
echo "tmp.mount restarted with noexec"
