#!/usr/bin/env bash
# Rule: aide_periodic_cron_checking
set -euo pipefail

CRON=/etc/cron.d/aide-check
cat > "$CRON" <<'EOF'
# STIG: daily AIDE integrity check, report mailed to root
SHELL=/bin/bash
PATH=/usr/sbin:/usr/bin:/sbin:/bin
05 4 * * * root /usr/sbin/aide --check 2>&1 | /bin/mail -s "$(hostname) - daily AIDE integrity check" root
EOF
chmod 0644 "$CRON"

command -v mail >/dev/null || dnf -y install s-nail
grep aide "$CRON"
