#!/usr/bin/env bash
# Rule: grub2_audit_argument
set -euo pipefail

CFG=/boot/grub2/grub.cfg
cp -a "$CFG" "$CFG.bak.$(date -u +%Y%m%dT%H%M%SZ)"

# append audit=1 to every kernel line that does not have it yet
sed -i -E '/^\s*linux(efi)?\s/{/\baudit=1\b/!s/$/ audit=1/}' "$CFG"

echo "kernel lines with audit=1:"
grep -cE '^\s*linux(efi)?\s.*\baudit=1\b' "$CFG"
