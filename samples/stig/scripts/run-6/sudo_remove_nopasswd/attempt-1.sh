#!/usr/bin/env bash
# Rule: sudo_remove_nopasswd
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
BK="/root/sudoers-backup-${TS}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

mapfile -t files < <(grep -lE '^[^#]*\bNOPASSWD\s*:' /etc/sudoers /etc/sudoers.d/* 2>/dev/null || true)
if (( ${#files[@]} == 0 )); then
  echo "no NOPASSWD entries"
  exit 0
fi

# backups outside /etc/sudoers.d so sudo never reads them
mkdir -p "$BK"
cp -a /etc/sudoers /etc/sudoers.d "$BK/"

for f in "${files[@]}"; do
  tmp="$WORK/$(basename "$f")"
  cp -a -- "$f" "$tmp"
  # keep each rule, drop only the NOPASSWD tag
  sed -i -E '/^[^#]/ s/\bNOPASSWD\s*:\s*//g' "$tmp"
  visudo -cf "$tmp"
  install -m 0440 -o root -g root "$tmp" "$f"
  echo "fixed $f"
done

visudo -c
if grep -rsE '^[^#]*\bNOPASSWD' /etc/sudoers /etc/sudoers.d/; then
  echo "NOPASSWD still present" >&2
  exit 1
fi
