#!/usr/bin/env bash
# Rule: aide_periodic_cron_checking
# Daily AIDE check from cron (what the scanner reads) and a systemd timer
# (journal logging, easier to monitor).
set -euo pipefail

CRON=/etc/cron.d/aide-check
UNIT_DIR=/etc/systemd/system

cat > "$CRON" <<'EOF'
# STIG: daily AIDE integrity check, report mailed to root
SHELL=/bin/bash
PATH=/usr/sbin:/usr/bin:/sbin:/bin
05 4 * * * root /usr/sbin/aide --check 2>&1 | /bin/mail -s "$(hostname) - daily AIDE integrity check" root
EOF
chmod 0644 "$CRON"

cat > "$UNIT_DIR/aidecheck.service" <<'EOF'
[Unit]
Description=AIDE integrity check
ConditionPathExists=/var/lib/aide/aide.db.gz

[Service]
Type=oneshot
ExecStart=/usr/sbin/aide --check
EOF

cat > "$UNIT_DIR/aidecheck.timer" <<'EOF'
[Unit]
Description=Daily AIDE integrity check

[Timer]
OnCalendar=*-*-* 04:35:00
Persistent=true

[Install]
WantedBy=timers.target
EOF

command -v mail >/dev/null || dnf -y install s-nail
systemctl daemon-reload
systemctl enable --now aidecheck.timer
systemctl list-timers aidecheck.timer --no-pager
grep aide "$CRON"
