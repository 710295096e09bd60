#!/usr/bin/env bash
# Rule: accounts_password_pam_minlen
# minlen as a pam_pwquality argument takes precedence over pwquality.conf.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"

for f in /etc/pam.d/system-auth /etc/pam.d/password-auth; do
  real="$(readlink -f "$f")"
  cp -a -- "$real" "${real}.bak.${TS}"
  if grep -qE '^password\s+requisite\s+pam_pwquality\.so.*\bminlen=' "$real"; then
    sed -i -E '/^password\s+requisite\s+pam_pwquality\.so/ s/\bminlen=[0-9]+/minlen=15/' "$real"
  else
    sed -i -E '/^password\s+requisite\s+pam_pwquality\.so/ s/$/ minlen=15/' "$real"
  fi
  grep -nE 'pam_pwquality\.so' "$real"
done
