#!/usr/bin/env bash
# Rule: set_firewalld_default_zone
set -euo pipefail

CONF=/etc/firewalld/firewalld.conf
cp -a "$CONF" "$CONF.bak.$(date -u +%Y%m%dT%H%M%SZ)"

if grep -qE '^DefaultZone=' "$CONF"; then
  sed -i -E 's/^DefaultZone=.*/DefaultZone=drop/' "$CONF"
else
  echo 'DefaultZone=drop' >> "$CONF"
fi

# the drop zone keeps established sessions; a reload is enough
firewall-cmd --reload
firewall-cmd --get-default-zone
grep '^DefaultZone=' "$CONF"
