#!/usr/bin/env bash
# Rule: selinux_state
set -euo pipefail

CFG=/etc/selinux/config
cp -a "$CFG" "$CFG.bak.$(date -u +%Y%m%dT%H%M%SZ)"

sed -i -E 's/^SELINUX=.*/SELINUX=enforcing/' "$CFG"
grep -q '^SELINUX=enforcing$' "$CFG"

mode="$(getenforce)"
case "$mode" in
  Permissive) setenforce 1 ;;
  Disabled)   echo "SELinux disabled: enforcing only after relabel and reboot" >&2 ;;
esac

# relabel on next boot after any mode change
touch /.autorelabel
sestatus
