#!/usr/bin/env bash
# Rule: audit_rules_immutable
set -euo pipefail

RULES=/etc/audit/rules.d/99-finalize.rules

if [[ -f "$RULES" ]]; then cp -a "$RULES" "$RULES.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi
printf '%s\n' '## make the audit configuration immutable; reboot to change rules' '-e 2' > "$RULES"
chmod 0600 "$RULES"

# load now so the running kernel reports enabled 2 as well
augenrules --load
auditctl -s | grep '^enabled'
tail -n 1 /etc/audit/audit.rules | grep -qx -- '-e 2'
echo "-e 2 is the last rule and loaded"
