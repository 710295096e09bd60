#!/usr/bin/env bash
# Rule: harden_sshd_macs_openssh_conf_crypto_policy
# Goal: the OpenSSH client may only offer FIPS-approved MACs
#       (hmac-sha2-512, hmac-sha2-256 and their -etm variants).
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
SSH_CONFIG=/etc/ssh/ssh_config
WANT_MACS="hmac-sha2-512-etm@openssh.com,hmac-sha2-256-etm@openssh.com,hmac-sha2-512,hmac-sha2-256"

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

backup() {
  local f="$1"
  [[ -f "$f" ]] || return 0
  cp -a -- "$f" "${f}.bak.${TS}"
  log "saved ${f}.bak.${TS}"
}

# What the client actually negotiates, after all includes are resolved.
current_macs() {
  ssh -G -F "$SSH_CONFIG" localhost 2>/dev/null | awk '$1 == "macs" {print $2}'
}

log "effective client MACs before change: $(current_macs)"

# The stock file pulls in /etc/ssh/ssh_config.d/*.conf at the top, and ssh
# keeps the first value it sees for an option, so whatever a drop-in says
# about MACs beats anything appended further down. Instead of chasing every
# drop-in, write the client config in full with the MACs we need and
# nothing that can override them.
backup "$SSH_CONFIG"

if compgen -G '/etc/ssh/ssh_config.d/*.conf' >/dev/null; then
  log "drop-ins that will no longer be read:"
  ls -1 /etc/ssh/ssh_config.d/*.conf >&2
fi

cat <<EOF > /etc/ssh/ssh_config
# /etc/ssh/ssh_config - system-wide OpenSSH client configuration
# Written by STIG remediation (harden_sshd_macs_openssh_conf_crypto_policy)
# on ${TS}. Previous version: ${SSH_CONFIG}.bak.${TS}
#
# The settings below used to come from ssh_config.d/50-redhat.conf.

Host *
    MACs ${WANT_MACS}
    GSSAPIAuthentication yes
    ForwardX11Trusted yes
    SendEnv LANG LC_CTYPE LC_NUMERIC LC_TIME LC_COLLATE LC_MONETARY LC_MESSAGES
    SendEnv LC_PAPER LC_NAME LC_ADDRESS LC_TELEPHONE LC_MEASUREMENT
    SendEnv LC_IDENTIFICATION LC_ALL LANGUAGE
    SendEnv XMODIFIERS
EOF

chmod 0644 "$SSH_CONFIG"
chown root:root "$SSH_CONFIG"
restorecon -F "$SSH_CONFIG" 2>/dev/null || true

# ssh -G fails on unknown options or bad MAC names: roll back if it does.
if ! ssh -G -F "$SSH_CONFIG" localhost >/dev/null 2>&1; then
  log "new ssh_config does not parse, restoring backup"
  cp -a -- "${SSH_CONFIG}.bak.${TS}" "$SSH_CONFIG"
  die "ssh -G rejected the generated config"
fi

got="$(current_macs)"
log "effective client MACs after change: ${got}"

IFS=',' read -r -a got_list <<< "$got"
for mac in "${got_list[@]}"; do
  case "$mac" in
    hmac-sha2-512|hmac-sha2-256|hmac-sha2-512-etm@openssh.com|hmac-sha2-256-etm@openssh.com) ;;
    *) die "unexpected MAC still offered: $mac" ;;
  esac
done

if grep -qsE '^\s*Include\b' "$SSH_CONFIG"; then
  die "Include directive still present in $SSH_CONFIG"
fi

log "OK: client offers only ${got}"
