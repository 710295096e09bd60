#!/usr/bin/env bash
# Rule: audit_rules_immutable  (attempt 2)
# auditctl -e 2 alone was not persistent. Write the rules file so it
# survives a reboot and load it so the running kernel matches.
set -euo pipefail

RULES=/etc/audit/rules.d/99-finalize.rules
TS="$(date -u +%Y%m%dT%H%M%SZ)"

if [[ -f "$RULES" ]]; then cp -a "$RULES" "${RULES}.bak.${TS}"; fi
printf '%s\n' '## immutable audit configuration' '-e 2' > "$RULES"
chmod 0600 "$RULES"

augenrules --load

# effective state, not just the file
state="$(auditctl -s | awk '$1=="enabled"{print $2}')"
[[ "$state" == 2 ]] || { echo "running audit enabled=$state" >&2; exit 1; }
tail -n 1 /etc/audit/audit.rules | grep -qx -- '-e 2'
echo "audit immutable (file + running kernel)"
