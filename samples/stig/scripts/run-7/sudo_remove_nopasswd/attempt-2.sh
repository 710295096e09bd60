#!/usr/bin/env bash
# Rule: sudo_remove_nopasswd  (attempt 2)
# Deleting whole lines also deleted the rules that grant sudo at all
# (stigadm lost every privilege). Keep the rules, remove only the tag.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
BK="/root/sudoers-backup-${TS}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

mkdir -p "$BK"
cp -a /etc/sudoers /etc/sudoers.d "$BK/"

for f in /etc/sudoers /etc/sudoers.d/*; do
  [[ -f "$f" ]] || continue
  grep -qE '^[^#]*\bNOPASSWD\s*:' "$f" || continue
  tmp="$WORK/$(basename "$f")"
  cp -a -- "$f" "$tmp"
  sed -i -E '/^[^#]/ s/\bNOPASSWD\s*:\s*//g' "$tmp"
  visudo -cf "$tmp"
  install -m 0440 -o root -g root "$tmp" "$f"
  echo "removed NOPASSWD tag in $f"
done

visudo -c
if grep -rsE '^[^#]*\bNOPASSWD' /etc/sudoers /etc/sudoers.d/; then
  echo "NOPASSWD still present" >&2; exit 1
fi
sudo -l -U stigadm | tail -n 3
