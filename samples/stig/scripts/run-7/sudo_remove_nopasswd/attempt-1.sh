#!/usr/bin/env bash
# Rule: sudo_remove_nopasswd
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
BK="/root/sudoers-backup-${TS}"
mkdir -p "$BK"
cp -a /etc/sudoers /etc/sudoers.d "$BK/"

for f in /etc/sudoers /etc/sudoers.d/*; do
  [[ -f "$f" ]] || continue
  grep -q 'NOPASSWD' "$f" || continue
  tmp="$(mktemp)"
  cp -a -- "$f" "$tmp"
  sed -i '/NOPASSWD/d' "$tmp"          # no partial rules left behind
  visudo -cf "$tmp"
  install -m 0440 -o root -g root "$tmp" "$f"
  rm -f "$tmp"
  echo "cleaned $f"
done

visudo -c
if grep -rs NOPASSWD /etc/sudoers /etc/sudoers.d/; then exit 1; fi
echo "no NOPASSWD left"
