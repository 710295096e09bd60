#!/usr/bin/env bash
# Rule: package_telnet-server_removed
set -euo pipefail

if systemctl list-unit-files telnet.socket >/dev/null 2>&1; then
  systemctl disable --now telnet.socket || true
fi

if rpm -q telnet-server >/dev/null 2>&1; then
  dnf -y remove telnet-server
fi

if rpm -q telnet-server >/dev/null 2>&1; then
  echo "telnet-server still installed" >&2
  exit 1
fi
echo "telnet-server not installed"
