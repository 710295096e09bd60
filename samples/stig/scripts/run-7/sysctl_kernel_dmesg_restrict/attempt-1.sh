#!/usr/bin/env bash
# Rule: sysctl_kernel_dmesg_restrict
set -euo pipefail

KEY=kernel.dmesg_restrict
FILE=/etc/sysctl.d/99-stig.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"

install -d -m 0755 /etc/sysctl.d
touch "$FILE"
cp -a "$FILE" "${FILE}.bak.${TS}"
if grep -qE "^\s*${KEY//./[./]}\s*=" "$FILE"; then
  sed -i -E "s|^\s*${KEY//./[./]}\s*=.*|${KEY} = 1|" "$FILE"
else
  echo "${KEY} = 1" >> "$FILE"
fi

# a conflicting value in any other sysctl file would fail the scan
conflicts="$(grep -rHnE --include='*.conf' "^\s*${KEY//./[./]}\s*=\s*0" \
  /etc/sysctl.conf /etc/sysctl.d /run/sysctl.d /usr/lib/sysctl.d 2>/dev/null || true)"
if [[ -n "$conflicts" ]]; then
  echo "conflicting settings:" >&2
  echo "$conflicts" >&2
  exit 1
fi

# sysctl -p would only read /etc/sysctl.conf
sysctl --system >/dev/null
[[ "$(sysctl -n "$KEY")" == 1 ]]
echo "${KEY} = 1"
