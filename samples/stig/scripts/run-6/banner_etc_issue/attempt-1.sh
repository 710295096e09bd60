#!/usr/bin/env bash
# Rule: banner_etc_issue
set -euo pipefail

cp -a /etc/issue "/etc/issue.bak.$(date -u +%Y%m%dT%H%M%SZ)"

# DoD logon notice
printf '%s\n' "I've read & consent to terms in IS user agreem't." > /etc/issue
chmod 0644 /etc/issue
restorecon /etc/issue 2>/dev/null || true

cat /etc/issue
