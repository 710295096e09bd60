#!/usr/bin/env bash
# Rule: sysctl_kernel_dmesg_restrict
# Only privileged users may read the kernel ring buffer.
set -euo pipefail

FILE=/etc/sysctl.d/99-stig-dmesg.conf
if [[ -f "$FILE" ]]; then cp -a "$FILE" "$FILE.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi
echo 'kernel.dmesg_restrict = 1' > "$FILE"
chmod 0644 "$FILE"

sysctl -p "$FILE"
[[ "$(sysctl -n kernel.dmesg_restrict)" == 1 ]]
echo "kernel.dmesg_restrict = 1"
