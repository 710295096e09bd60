#!/usr/bin/env bash
# Rule: harden_sshd_macs_openssh_conf_crypto_policy  (attempt 3)
# Two policy changes did not satisfy the check. The back-end may simply be
# stale or not reach the client: re-apply the policy, make sure the client
# config still reaches the crypto-policies back-end through its Include
# chain, and restart sshd. No MACs lines are added to ssh_config.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
POLICY="FIPS:STIG-MACS"
MODULE_FILE=/etc/crypto-policies/policies/modules/STIG-MACS.pmod
BACKEND=/etc/crypto-policies/back-ends/openssh.config
SSH_CONFIG=/etc/ssh/ssh_config
REDHAT_DROPIN=/etc/ssh/ssh_config.d/50-redhat.conf

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

backup() {
  local f="$1"
  [[ -e "$f" ]] || return 0
  cp -a -- "$f" "${f}.bak.${TS}"
}

ensure_module() {
  if ! grep -qs '^mac@SSH = HMAC-SHA2-512 HMAC-SHA2-256$' "$MODULE_FILE"; then
    mkdir -p "$(dirname "$MODULE_FILE")"
    backup "$MODULE_FILE"
    printf '%s\n' '# STIG: SHA-2 MACs only for SSH' \
      'mac@SSH = HMAC-SHA2-512 HMAC-SHA2-256' > "$MODULE_FILE"
    chmod 0644 "$MODULE_FILE"
  fi
}

reapply_policy() {
  # --set with the same value regenerates every back-end
  update-crypto-policies --set "$POLICY"
  update-crypto-policies --show | grep -qx "$POLICY" || die "policy is not ${POLICY}"
}

# The client reads the policy through: ssh_config -> Include ssh_config.d/*.conf
# -> 50-redhat.conf -> Include /etc/crypto-policies/back-ends/openssh.config
ensure_include_chain() {
  if ! grep -qE '^\s*Include\s+/etc/ssh/ssh_config\.d/\*\.conf' "$SSH_CONFIG"; then
    log "restoring Include of ssh_config.d in ${SSH_CONFIG}"
    backup "$SSH_CONFIG"
    sed -i '1i Include /etc/ssh/ssh_config.d/*.conf' "$SSH_CONFIG"
  fi
  grep -qE "^\s*Include\s+${BACKEND}" "$REDHAT_DROPIN" \
    || die "${REDHAT_DROPIN} does not include the crypto-policies back-end"
}

ensure_module
reapply_policy
ensure_include_chain

macs="$(awk 'tolower($1) == "macs" {print $2}' "$BACKEND")"
log "back-end MACs: ${macs}"
case ",${macs}," in
  *,hmac-sha1,*|*,hmac-sha1-etm@openssh.com,*|*umac-*) die "back-end still lists weak MACs" ;;
esac

sshd -t || die "sshd -t failed"
systemctl restart sshd
systemctl is-active --quiet sshd || die "sshd not active"

srv_macs="$(awk 'tolower($1) == "macs" {print $2}' /etc/crypto-policies/back-ends/opensshserver.config 2>/dev/null || true)"
[[ -z "$srv_macs" ]] || log "server back-end MACs: ${srv_macs}"

# Record what was done, for the next attempt's context.
STATE="/var/lib/stig-remediation/macs-attempt3.${TS}.txt"
mkdir -p "$(dirname "$STATE")"
{
  echo "policy: $(update-crypto-policies --show)"
  echo "module: $(grep -v '^#' "$MODULE_FILE")"
  echo "client back-end MACs: ${macs}"
  echo "ssh_config Include lines:"
  grep -nE '^\s*Include' "$SSH_CONFIG" || true
  echo "ssh_config.d contents:"
  ls -1 /etc/ssh/ssh_config.d/ || true
} > "$STATE"
log "state written to ${STATE}"

log "policy $(update-crypto-policies --show) re-applied, sshd restarted"
log "client MACs as resolved by ssh -G (for the record):"
ssh -G localhost | awk '$1 == "macs"' >&2 || true
