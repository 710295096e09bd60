#!/usr/bin/env bash
# Rule: audit_rules_time_adjtimex  (attempt 2)
# 32-bit binaries can still call adjtimex through the b32 table; the check
# wants a rule for each architecture.
set -euo pipefail

RULES=/etc/audit/rules.d/30-time-change.rules

if [[ -f "$RULES" ]]; then cp -a "$RULES" "$RULES.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi
cat > "$RULES" <<'EOF'
## adjtimex, both syscall tables
-a always,exit -F arch=b32 -S adjtimex -k audit_time_rules
-a always,exit -F arch=b64 -S adjtimex -k audit_time_rules
EOF
chmod 0600 "$RULES"

augenrules --load
n="$(auditctl -l | grep -c -- '-S adjtimex')"
[[ "$n" -ge 2 ]] || { echo "expected 2 adjtimex rules, found $n" >&2; exit 1; }
auditctl -l | grep -- '-S adjtimex'
