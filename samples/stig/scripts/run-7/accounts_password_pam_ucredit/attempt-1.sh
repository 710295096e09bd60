#!/usr/bin/env bash
# Rule: accounts_password_pam_ucredit
# The four credit rules are set together in one drop-in; negative values
# mean "at least one character of this class".
set -euo pipefail

DIR=/etc/security/pwquality.conf.d
FILE="$DIR/50-stig-credit.conf"

install -d -m 0755 "$DIR"
if [[ -f "$FILE" ]]; then cp -a "$FILE" "$FILE.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi

cat > "$FILE" <<'EOF'
# STIG password complexity (credit rules)
ucredit = -1
lcredit = -1
dcredit = -1
ocredit = -1
EOF
chmod 0644 "$FILE"

# a positive value left in pwquality.conf is worth knowing about
for key in ucredit lcredit dcredit ocredit; do
  if grep -qE "^\s*${key}\s*=\s*[0-9]" /etc/security/pwquality.conf; then
    echo "warning: pwquality.conf sets a positive ${key}" >&2
  fi
done
grep -H credit "$FILE"
