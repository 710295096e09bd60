#!/usr/bin/env bash
# Rule: accounts_password_pam_ucredit  (at least one upper-case character)
set -euo pipefail

CONF=/etc/security/pwquality.conf
cp -a "$CONF" "$CONF.bak.$(date -u +%Y%m%dT%H%M%SZ)"

# negative credit = minimum number of characters of that class
if grep -qE '^\s*#?\s*ucredit\s*=' "$CONF"; then
  sed -i -E 's/^\s*#?\s*ucredit\s*=.*/ucredit = -1/' "$CONF"
else
  echo 'ucredit = -1' >> "$CONF"
fi

grep -E '^\s*ucredit\s*=\s*-1\s*$' "$CONF"
