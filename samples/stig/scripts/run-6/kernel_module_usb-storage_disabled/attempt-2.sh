#!/usr/bin/env bash
# Rule: kernel_module_usb-storage_disabled  (attempt 2)
# A blacklist alone only stops autoloading; an install override makes any
# explicit modprobe a no-op.
set -euo pipefail

CONF=/etc/modprobe.d/usb-storage.conf
if [[ -f "$CONF" ]]; then cp -a "$CONF" "$CONF.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi

cat > "$CONF" <<'EOF'
# STIG: USB mass storage disabled
install usb-storage /bin/true
blacklist usb-storage
EOF
chmod 0644 "$CONF"

modprobe -n -v usb-storage
