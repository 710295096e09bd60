#!/usr/bin/env bash
# Rule: audit_rules_time_adjtimex
set -euo pipefail

RULES=/etc/audit/rules.d/30-time-change.rules

# x86_64 host: the 64-bit syscall table is the one in use
[[ "$(uname -m)" == x86_64 ]] || { echo "unexpected arch $(uname -m)" >&2; exit 1; }

if [[ -f "$RULES" ]]; then cp -a "$RULES" "$RULES.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi
echo '-a always,exit -F arch=b64 -S adjtimex -k audit_time_rules' > "$RULES"
chmod 0600 "$RULES"

augenrules --load
auditctl -l | grep -- '-S adjtimex'
