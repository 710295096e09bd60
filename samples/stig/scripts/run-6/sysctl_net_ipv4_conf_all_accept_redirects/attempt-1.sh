#!/usr/bin/env bash
# Rule: sysctl_net_ipv4_conf_all_accept_redirects
set -euo pipefail

KEY=net.ipv4.conf.all.accept_redirects
CONF=/etc/sysctl.conf
cp -a "$CONF" "$CONF.bak.$(date -u +%Y%m%dT%H%M%SZ)"

if grep -qE "^\s*${KEY//./\\.}\s*=" "$CONF"; then
  sed -i -E "s/^\s*${KEY//./\\.}\s*=.*/${KEY} = 0/" "$CONF"
else
  echo "${KEY} = 0" >> "$CONF"
fi

sysctl -p "$CONF"
[[ "$(sysctl -n "$KEY")" == 0 ]]
echo "$KEY = 0"
