#!/usr/bin/env bash
# Rule: sshd_disable_root_login
# Disable root login globally but keep key-only root access from the
# management bastion so automation keeps working.
set -euo pipefail

DROPIN=/etc/ssh/sshd_config.d/00-stig.conf
BASTION=10.20.0.5
TS="$(date -u +%Y%m%dT%H%M%SZ)"

install -d -m 0755 /etc/ssh/sshd_config.d
if [[ -f "$DROPIN" ]]; then
  cp -a "$DROPIN" "${DROPIN}.bak.${TS}"
fi

cat > "$DROPIN" <<EOF
# STIG sshd_disable_root_login (written ${TS})
PermitRootLogin no

# key-only root access from the management bastion
Match Address ${BASTION}
    PermitRootLogin prohibit-password
EOF
chmod 0600 "$DROPIN"

# restart so the scanner sees the new value; the unit checks the config
systemctl restart sshd
systemctl is-active sshd
grep -n 'PermitRootLogin' "$DROPIN"
