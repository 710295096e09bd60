#!/usr/bin/env bash
# Rule: audit_rules_privileged_commands_sudo
set -euo pipefail

RULES=/etc/audit/rules.d/50-privileged-sudo.rules
LINE='-a always,exit -F path=/usr/bin/sudo -F perm=x -F auid>=1000 -F auid!=unset -k privileged'

if [[ -f "$RULES" ]] && grep -qxF -- "$LINE" "$RULES"; then
  echo "rule already present"
else
  install -m 0600 /dev/null "$RULES.tmp"
  echo "$LINE" > "$RULES.tmp"
  mv -f "$RULES.tmp" "$RULES"
fi

augenrules --load
auditctl -l | grep -F -- '-F path=/usr/bin/sudo '
