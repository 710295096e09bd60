#!/usr/bin/env bash
# Rule: accounts_passwords_pam_faillock_deny
# Count every failed logon: pam_faillock goes first in the auth stack.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
LINE='auth        required      pam_faillock.so authfail deny=3 unlock_time=0'

for f in /etc/pam.d/system-auth /etc/pam.d/password-auth; do
  real="$(readlink -f "$f")"          # authselect links these into /etc/authselect
  cp -a -- "$real" "${real}.bak.${TS}"
  if grep -qE '^auth\s+required\s+pam_faillock\.so\s+authfail' "$real"; then
    echo "$real: faillock authfail line already present"
    continue
  fi
  # insert before the first auth line
  sed -i "0,/^auth\b/s//${LINE}\nauth/" "$real"
  echo "--- $real"
  grep -n '^auth' "$real"
done

grep -c 'pam_faillock.so authfail deny=3' /etc/pam.d/system-auth /etc/pam.d/password-auth
