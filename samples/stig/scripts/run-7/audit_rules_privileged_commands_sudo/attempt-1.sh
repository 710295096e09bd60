#!/usr/bin/env bash
# Rule: audit_rules_privileged_commands_sudo
# Generate privileged-command audit rules for every setuid/setgid binary on
# local filesystems. This covers sudo and the sibling per-command rules
# (su, passwd, chage, mount, ...) in one file.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
RULES_DIR=/etc/audit/rules.d
OUT="${RULES_DIR}/50-privileged.rules"
TMP="$(mktemp)"
trap 'rm -f "$TMP" "$TMP.body" "$TMP.final"' EXIT

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# Local, non-pseudo filesystems only; network mounts are skipped on purpose.
local_mounts() {
  findmnt -rn -o TARGET,FSTYPE \
    | awk '$2 !~ /^(proc|sysfs|tmpfs|devtmpfs|devpts|cgroup2?|securityfs|pstore|bpf|autofs|mqueue|hugetlbfs|debugfs|tracefs|configfs|fusectl|nfs4?|cifs|fuse\..*)$/ {print $1}'
}

rule_for() {
  printf -- '-a always,exit -F path=%s -F perm=x -F auid>=1000 -F auid!=unset -k privileged\n' "$1"
}

# 1. Collect binaries.
count=0
: > "$TMP.body"
while IFS= read -r mnt; do
  while IFS= read -r -d '' bin; do
    rule_for "$bin" >> "$TMP.body"
    count=$((count + 1))
  done < <(find "$mnt" -xdev -type f -perm /6000 -print0 2>/dev/null | sort -z)
done < <(local_mounts)

(( count > 0 )) || die "no setuid/setgid binaries found (find failed?)"
grep -qF -- '-F path=/usr/bin/sudo ' "$TMP.body" || die "sudo not among the generated rules"

# 2. Bind mounts show the same binary twice; augenrules rejects duplicates.
sort -u "$TMP.body" -o "$TMP.body"
count="$(wc -l < "$TMP.body")"

{
  echo "## privileged commands (setuid/setgid), generated ${TS}"
  echo "## re-run the generator after installing packages that ship setuid binaries"
  cat "$TMP.body"
} > "$TMP.final"

# 3. Install, keeping the previous file.
if [[ -f "$OUT" ]]; then
  cp -a -- "$OUT" "${OUT}.bak.${TS}"
  if cmp -s "$TMP.final" "$OUT"; then
    log "rules unchanged"
  fi
fi
install -m 0600 "$TMP.final" "$OUT"
log "wrote ${count} rules to ${OUT}"

# 4. An older hand-written sudo rule elsewhere would now be a duplicate.
for f in "$RULES_DIR"/*.rules; do
  [[ "$f" == "$OUT" ]] && continue
  if grep -qF -- '-F path=/usr/bin/sudo ' "$f"; then
    log "removing duplicate sudo rule from $f"
    cp -a -- "$f" "${f}.bak.${TS}"
    sed -i '\|-F path=/usr/bin/sudo |d' "$f"
  fi
done

# 5. Load and verify in the running kernel.
augenrules --load

loaded="$(auditctl -l | grep -c -- 'key=privileged$' || true)"
log "loaded privileged rules: ${loaded} (generated ${count})"
auditctl -l | grep -F -- '-F path=/usr/bin/sudo ' >/dev/null || die "sudo rule not loaded"
(( loaded >= count )) || die "only ${loaded}/${count} privileged rules loaded"

# 6. Spot-check a few well-known binaries.
for bin in /usr/bin/sudo /usr/bin/su /usr/bin/passwd /usr/bin/chage; do
  [[ -e "$bin" ]] || continue
  auditctl -l | grep -qF -- "-F path=${bin} " || die "no loaded rule for ${bin}"
done
log "privileged-command auditing active for ${count} binaries"
