#!/usr/bin/env bash
# Rule: audit_rules_immutable  (attempt 2)
# -e 2 is written for the next boot only: loading it now made the running
# audit config immutable and the evaluator could not load anything.
set -euo pipefail

RULES=/etc/audit/rules.d/99-finalize.rules

if [[ -f "$RULES" ]]; then cp -a "$RULES" "$RULES.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi
printf '%s\n' '## make the audit configuration immutable; reboot to change rules' '-e 2' > "$RULES"
chmod 0600 "$RULES"

# must sort last among the rules.d files
last="$(ls -1 /etc/audit/rules.d/*.rules | sort | tail -n 1)"
[[ "$last" == "$RULES" ]] || { echo "$last sorts after $RULES" >&2; exit 1; }

# regenerate audit.rules without loading it
augenrules
tail -n 1 /etc/audit/audit.rules | grep -qx -- '-e 2'
echo "immutable flag written; takes effect at next boot"
