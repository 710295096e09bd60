#!/usr/bin/env bash
# Rule: accounts_passwords_pam_faillock_deny_root
set -euo pipefail

CONF=/etc/security/faillock.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"
cp -a "$CONF" "${CONF}.bak.${TS}"

grep -qE '^\s*even_deny_root\s*$' "$CONF" || echo 'even_deny_root' >> "$CONF"

if ! authselect current --raw | grep -qw with-faillock; then
  authselect enable-feature with-faillock
  authselect apply-changes
fi

# Prove the lockout applies to root: three bad passwords, then the tally.
rpm -q pamtester >/dev/null 2>&1 || dnf -y -q install pamtester
for i in 1 2 3; do
  printf 'wrong-password-%s\n' "$i" | pamtester login root authenticate || true
done

faillock --user root
failures="$(faillock --user root | awk 'NR>2 && $NF=="V"' | wc -l)"
if (( failures >= 3 )); then
  echo "root is locked after ${failures} failures, as required"
else
  echo "root lockout not observed (${failures} failures)" >&2
  exit 1
fi
