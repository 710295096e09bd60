#!/usr/bin/env bash
# Rule: accounts_password_pam_minlen  (attempt 2)
# The check reads pwquality.conf and pwquality.conf.d, not PAM arguments.
set -euo pipefail

DIR=/etc/security/pwquality.conf.d
FILE="$DIR/50-stig-minlen.conf"

install -d -m 0755 "$DIR"
cat > "$FILE" <<'EOF'
# STIG accounts_password_pam_minlen
minlen = 15
EOF
chmod 0644 "$FILE"

# the main file must not carry a conflicting minlen
if grep -qE '^\s*minlen\s*=' /etc/security/pwquality.conf; then
  cp -a /etc/security/pwquality.conf "/etc/security/pwquality.conf.bak.$(date -u +%Y%m%dT%H%M%SZ)"
  sed -i -E 's/^\s*minlen\s*=.*/# & (set in pwquality.conf.d)/' /etc/security/pwquality.conf
fi
grep -H minlen "$FILE"
