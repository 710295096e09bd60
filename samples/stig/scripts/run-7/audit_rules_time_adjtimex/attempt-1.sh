#!/usr/bin/env bash
# Rule: audit_rules_time_adjtimex
# Time changes for both syscall tables; adjtimex, settimeofday and
# clock_settime share one rule per architecture.
set -euo pipefail

RULES=/etc/audit/rules.d/30-time-change.rules

if [[ -f "$RULES" ]]; then cp -a "$RULES" "$RULES.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi
cat > "$RULES" <<'EOF'
## time changes, both syscall tables
-a always,exit -F arch=b32 -S adjtimex -S settimeofday -S clock_settime -k audit_time_rules
-a always,exit -F arch=b64 -S adjtimex -S settimeofday -S clock_settime -k audit_time_rules
EOF
chmod 0600 "$RULES"

augenrules --load
for arch in b32 b64; do
  auditctl -l | grep -E -- "arch=${arch} .*-S adjtimex" >/dev/null \
    || { echo "no loaded adjtimex rule for ${arch}" >&2; exit 1; }
done
auditctl -l | grep -- 'audit_time_rules'
