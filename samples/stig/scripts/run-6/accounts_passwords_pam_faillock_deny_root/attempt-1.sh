#!/usr/bin/env bash
# Rule: accounts_passwords_pam_faillock_deny_root
set -euo pipefail

CONF=/etc/security/faillock.conf
cp -a "$CONF" "$CONF.bak.$(date -u +%Y%m%dT%H%M%SZ)"

# even_deny_root belongs in faillock.conf, not on the pam_faillock lines
if grep -qE '^\s*even_deny_root\s*$' "$CONF"; then
  :
elif grep -qE '^\s*#\s*even_deny_root\s*$' "$CONF"; then
  sed -i -E 's/^\s*#\s*even_deny_root\s*$/even_deny_root/' "$CONF"
else
  echo 'even_deny_root' >> "$CONF"
fi

# pam_faillock must actually be in the stack for the flag to matter
if ! authselect current --raw | grep -qw with-faillock; then
  authselect enable-feature with-faillock
  authselect apply-changes
fi

# Scanner probes leave failures in root's tally; with even_deny_root and
# unlock_time = 0 those would lock root out right away.
faillock --user root --reset

grep -nE '^\s*even_deny_root' "$CONF"
authselect current --raw | grep -w with-faillock
if [[ -n "$(faillock --user root | awk 'NR>2')" ]]; then
  echo "root tally not empty" >&2; exit 1
fi
echo "even_deny_root set; root tally clean"
