#!/usr/bin/env bash
# Rule: kernel_module_usb-storage_disabled
set -euo pipefail

CONF=/etc/modprobe.d/usb-storage.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"

if [[ -f "$CONF" ]]; then cp -a "$CONF" "${CONF}.bak.${TS}"; fi
printf '%s\n' \
  '# STIG kernel_module_usb-storage_disabled' \
  'install usb-storage /bin/false' \
  'blacklist usb-storage' > "$CONF"
chmod 0644 "$CONF"

# unload now if it is in use; the config only covers future loads
if lsmod | awk '{print $1}' | grep -qx usb_storage; then
  modprobe -r usb-storage
fi

modprobe -n -v usb-storage
if lsmod | awk '{print $1}' | grep -qx usb_storage; then
  echo "usb_storage still loaded" >&2; exit 1
fi
