#!/usr/bin/env bash
# Rule: audit_rules_immutable
# The scanner reads the running kernel state: make audit immutable now.
set -euo pipefail

auditctl -s
auditctl -e 2

state="$(auditctl -s | awk '$1=="enabled"{print $2}')"
[[ "$state" == 2 ]] || { echo "audit enabled=$state, expected 2" >&2; exit 1; }
echo "audit configuration is immutable until reboot"
