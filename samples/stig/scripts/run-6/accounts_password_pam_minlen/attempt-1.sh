#!/usr/bin/env bash
# Rule: accounts_password_pam_minlen  (minlen >= 15)
set -euo pipefail

CONF=/etc/security/pwquality.conf
cp -a "$CONF" "$CONF.bak.$(date -u +%Y%m%dT%H%M%SZ)"

if grep -qE '^\s*minlen\s*=' "$CONF"; then
  sed -i -E 's/^\s*minlen\s*=.*/minlen = 15/' "$CONF"
elif grep -qE '^\s*#\s*minlen\s*=' "$CONF"; then
  sed -i -E '0,/^\s*#\s*minlen\s*=.*/s//minlen = 15/' "$CONF"
else
  echo 'minlen = 15' >> "$CONF"
fi

# files in pwquality.conf.d are read after the main file; none may lower it
if compgen -G '/etc/security/pwquality.conf.d/*.conf' >/dev/null; then
  if grep -HE '^\s*minlen\s*=\s*([0-9]|1[0-4])\s*$' /etc/security/pwquality.conf.d/*.conf; then
    echo "a pwquality drop-in sets a lower minlen" >&2
    exit 1
  fi
fi
grep -E '^\s*minlen\s*=' "$CONF"
