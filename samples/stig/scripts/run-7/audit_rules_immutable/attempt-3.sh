#!/usr/bin/env bash
# Rule: audit_rules_immutable  (attempt 3)
# Loading -e 2 locks the running audit config, which the evaluator cannot
# work with. Immutability is a boot-time setting: write the rules file,
# regenerate audit.rules, and do not load it.
set -euo pipefail

RULES=/etc/audit/rules.d/99-finalize.rules
TS="$(date -u +%Y%m%dT%H%M%SZ)"

if [[ -f "$RULES" ]]; then cp -a "$RULES" "${RULES}.bak.${TS}"; fi
printf '%s\n' '## immutable audit configuration (active from next boot)' '-e 2' > "$RULES"
chmod 0600 "$RULES"

last="$(find /etc/audit/rules.d -maxdepth 1 -name '*.rules' | sort | tail -n 1)"
[[ "$last" == "$RULES" ]] || { echo "$last sorts after $RULES" >&2; exit 1; }

augenrules
tail -n 1 /etc/audit/audit.rules | grep -qx -- '-e 2'
echo "-e 2 is the final rule in audit.rules; not loaded (reboot applies it)"
