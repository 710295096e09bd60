#!/usr/bin/env bash
# Rule: kernel_module_usb-storage_disabled
set -euo pipefail

CONF=/etc/modprobe.d/blacklist.conf
touch "$CONF"
cp -a "$CONF" "$CONF.bak.$(date -u +%Y%m%dT%H%M%SZ)"

grep -qxF 'blacklist usb-storage' "$CONF" || echo 'blacklist usb-storage' >> "$CONF"

grep -n usb-storage "$CONF"
echo "usb-storage blacklisted"
