#!/usr/bin/env bash
# Rule: kernel_module_usb-storage_disabled  (attempt 3)
# The check wants 'install usb-storage /bin/false' (a failing install
# command), not /bin/true, plus the blacklist line.
set -euo pipefail

CONF=/etc/modprobe.d/usb-storage.conf
if [[ -f "$CONF" ]]; then cp -a "$CONF" "$CONF.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi

cat > "$CONF" <<'EOF'
# STIG: USB mass storage disabled
install usb-storage /bin/false
blacklist usb-storage
EOF
chmod 0644 "$CONF"

# the config only affects future loads
if lsmod | grep -q '^usb_storage\b'; then
  modprobe -r usb-storage
fi

modprobe -n -v usb-storage | grep -q '/bin/false'
if lsmod | grep -q '^usb_storage\b'; then echo "usb_storage still loaded" >&2; exit 1; fi
echo "usb-storage disabled"
