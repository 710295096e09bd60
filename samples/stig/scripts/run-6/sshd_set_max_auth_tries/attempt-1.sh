#!/usr/bin/env bash
# Rule: sshd_set_max_auth_tries  (MaxAuthTries <= 4)
set -euo pipefail

DROPIN=/etc/ssh/sshd_config.d/01-stig-maxauthtries.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"

# anything that sorts before us and sets MaxAuthTries would win
if grep -lsiE '^\s*MaxAuthTries' /etc/ssh/sshd_config.d/00-*.conf; then
  echo "an earlier drop-in already sets MaxAuthTries:" >&2
  grep -HsiE '^\s*MaxAuthTries' /etc/ssh/sshd_config.d/00-*.conf >&2
  exit 1
fi

if [[ -f "$DROPIN" ]]; then cp -a "$DROPIN" "$DROPIN.bak.$TS"; fi
printf '%s\n' "# STIG sshd_set_max_auth_tries" "MaxAuthTries 4" > "$DROPIN"
chmod 0600 "$DROPIN"

sshd -t
systemctl reload sshd

value="$(sshd -T | awk '$1 == "maxauthtries" {print $2}')"
echo "effective MaxAuthTries: $value"
(( value <= 4 ))
