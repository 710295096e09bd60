#!/usr/bin/env bash
# Rule: aide_build_database  (attempt 2)
# aide --init only writes aide.db.new.gz; the check wants aide.db.gz.
set -euo pipefail

DB=/var/lib/aide/aide.db.gz
NEW=/var/lib/aide/aide.db.new.gz

rpm -q aide >/dev/null 2>&1 || dnf -y --setopt=timeout=30 install aide

if [[ -f "$DB" ]]; then cp -a "$DB" "$DB.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi
aide --init
mv -f "$NEW" "$DB"
chmod 0600 "$DB"

# exit codes 1-7 only report differences; 14+ are errors
rc=0
aide --check >/dev/null || rc=$?
(( rc < 14 )) || { echo "aide --check failed with $rc" >&2; exit 1; }
ls -l "$DB"
