#!/usr/bin/env bash
# Rule: accounts_passwords_pam_faillock_deny_root  (attempt 2)
# Do not trigger failures on purpose: with unlock_time = 0 a test lockout
# of root is permanent (attempt 1 locked the console). Configure, then make
# sure root's tally is empty.
set -euo pipefail

CONF=/etc/security/faillock.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"
cp -a "$CONF" "${CONF}.bak.${TS}"

if ! grep -qE '^\s*even_deny_root\s*$' "$CONF"; then
  if grep -qE '^\s*#\s*even_deny_root\s*$' "$CONF"; then
    sed -i -E 's/^\s*#\s*even_deny_root\s*$/even_deny_root/' "$CONF"
  else
    echo 'even_deny_root' >> "$CONF"
  fi
fi

if ! authselect current --raw | grep -qw with-faillock; then
  authselect enable-feature with-faillock
  authselect apply-changes
fi

faillock --user root --reset

# verify: flag in the conf, feature active, no recorded failures for root
grep -qE '^\s*even_deny_root\s*$' "$CONF"
authselect current --raw | grep -qw with-faillock
if faillock --user root | awk 'NR>2' | grep -q .; then
  echo "root still has recorded failures" >&2; exit 1
fi
echo "even_deny_root active, root tally empty"
