#!/usr/bin/env bash
# Rule: harden_sshd_macs_openssh_conf_crypto_policy
# Restrict OpenSSH MACs through a crypto-policies sub-policy module.
# /etc/ssh/ssh_config is left untouched: it belongs to openssh-clients and
# the crypto-policies back-end is the source of truth for SSH algorithms.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
MODULE_DIR=/etc/crypto-policies/policies/modules
MODULE_NAME=STIG-MACS
MODULE_FILE="${MODULE_DIR}/${MODULE_NAME}.pmod"
BACKEND=/etc/crypto-policies/back-ends/openssh.config
STATE_DIR=/var/lib/stig-remediation

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

backup() {
  local f="$1"
  [[ -e "$f" ]] || return 0
  cp -a -- "$f" "${f}.bak.${TS}"
  log "saved ${f}.bak.${TS}"
}

# Every MAC in a comma list must be SHA-2 based.
only_sha2_macs() {
  local list="$1" mac
  IFS=',' read -r -a macs <<< "$list"
  for mac in "${macs[@]}"; do
    case "$mac" in
      hmac-sha2-512|hmac-sha2-256|hmac-sha2-512-etm@openssh.com|hmac-sha2-256-etm@openssh.com) ;;
      *) log "not allowed: ${mac}"; return 1 ;;
    esac
  done
}

# Roll back the policy if anything below fails, so the host is not left
# half-configured for the next attempt.
rollback() {
  local rc=$?
  if (( rc != 0 )) && [[ -n "${current:-}" ]]; then
    log "failure (exit ${rc}); restoring crypto policy ${current}"
    update-crypto-policies --set "$current" || true
    if [[ -e "${MODULE_FILE}.bak.${TS}" ]]; then
      cp -a -- "${MODULE_FILE}.bak.${TS}" "$MODULE_FILE"
    fi
  fi
  exit "$rc"
}

command -v update-crypto-policies >/dev/null || die "crypto-policies-scripts not installed"

mkdir -p "$STATE_DIR"
current="$(update-crypto-policies --show)"
trap rollback EXIT
log "current crypto policy: ${current}"
echo "$current" > "${STATE_DIR}/crypto-policy.before.${TS}"

# 1. Sub-policy module: only SHA-2 MACs for SSH.
mkdir -p "$MODULE_DIR"
backup "$MODULE_FILE"
cat > "$MODULE_FILE" <<'EOF'
# STIG: OpenSSH may only use FIPS 140-validated MACs
mac@SSH = HMAC-SHA2-512 HMAC-SHA2-256
EOF
chmod 0644 "$MODULE_FILE"

# 2. Apply it on top of DEFAULT.
target="DEFAULT:${MODULE_NAME}"
log "applying crypto policy ${target}"
update-crypto-policies --set "$target"

# 3. Confirm the policy and what the OpenSSH back-end now contains.
shown="$(update-crypto-policies --show)"
[[ "$shown" == "$target" ]] || die "policy is '${shown}', expected '${target}'"

grep -i '^MACs' "$BACKEND" >&2 || die "no MACs line in ${BACKEND}"
backend_macs="$(awk 'tolower($1) == "macs" {print $2}' "$BACKEND")"
only_sha2_macs "$backend_macs" || die "back-end still allows non-SHA-2 MACs"
log "back-end MACs: ${backend_macs}"

# 4. New sessions must pick the policy up.
sshd -t || die "sshd -t failed; not restarting"
systemctl restart sshd
systemctl is-active --quiet sshd || die "sshd is not active after restart"

# ssh_config is deliberately not modified by this fix.
if [[ /etc/ssh/ssh_config -nt "$MODULE_FILE" ]]; then
  log "warning: /etc/ssh/ssh_config changed during this run"
fi
log "done: crypto policy ${shown}"
