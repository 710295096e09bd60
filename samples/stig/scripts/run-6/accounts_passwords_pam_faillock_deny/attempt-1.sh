#!/usr/bin/env bash
# Rule: accounts_passwords_pam_faillock_deny
# Lock an account after 3 consecutive failed logons (deny = 3).
# The host is authselect-managed: PAM stacks are generated, so faillock is
# switched on with the with-faillock feature and tuned in faillock.conf.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
FAILLOCK_CONF=/etc/security/faillock.conf
PAM_FILES=(/etc/pam.d/system-auth /etc/pam.d/password-auth)

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

backup() {
  local f
  for f in "$@"; do
    [[ -e "$f" ]] || continue
    cp -a -- "$(readlink -f "$f")" "$(readlink -f "$f").bak.${TS}"
    log "backup $(readlink -f "$f").bak.${TS}"
  done
}

# Set "key = value" in faillock.conf; replaces a commented default too.
set_faillock_opt() {
  local key="$1" value="$2"
  if grep -qE "^\s*${key}\s*=" "$FAILLOCK_CONF"; then
    sed -i -E "s|^\s*${key}\s*=.*|${key} = ${value}|" "$FAILLOCK_CONF"
  elif grep -qE "^\s*#\s*${key}\s*=" "$FAILLOCK_CONF"; then
    sed -i -E "0,/^\s*#\s*${key}\s*=.*/s||${key} = ${value}|" "$FAILLOCK_CONF"
  else
    printf '%s = %s\n' "$key" "$value" >> "$FAILLOCK_CONF"
  fi
}

# Flag-style options without a value, such as 'audit'.
set_faillock_flag() {
  local flag="$1"
  if grep -qE "^\s*${flag}\s*$" "$FAILLOCK_CONF"; then
    return 0
  elif grep -qE "^\s*#\s*${flag}\s*$" "$FAILLOCK_CONF"; then
    sed -i -E "s|^\s*#\s*${flag}\s*$|${flag}|" "$FAILLOCK_CONF"
  else
    echo "$flag" >> "$FAILLOCK_CONF"
  fi
}

command -v authselect >/dev/null || die "authselect not installed"

profile="$(authselect current --raw | awk '{print $1}')"
[[ -n "$profile" ]] || die "no authselect profile selected"
log "authselect profile: $(authselect current --raw)"

backup "$FAILLOCK_CONF" "${PAM_FILES[@]}"

# 1. PAM: let authselect generate the pam_faillock lines.
if authselect current --raw | grep -qw with-faillock; then
  log "with-faillock already enabled"
else
  authselect enable-feature with-faillock
fi
authselect apply-changes

# 2. Policy values live in faillock.conf (read by every pam_faillock call).
[[ -f "$FAILLOCK_CONF" ]] || die "$FAILLOCK_CONF missing (pam package broken?)"
set_faillock_opt deny 3
set_faillock_opt fail_interval 900
set_faillock_opt unlock_time 0
set_faillock_flag audit

# 3. Verify: PAM stacks carry preauth/authfail, no deny= argument that
#    would override faillock.conf, and the conf holds deny = 3.
for f in "${PAM_FILES[@]}"; do
  grep -qE '^auth\s+required\s+pam_faillock\.so\s+preauth' "$f" \
    || die "$f: no pam_faillock preauth line"
  grep -qE '^auth\s+(required|\[default=die\])\s+pam_faillock\.so\s+authfail' "$f" \
    || die "$f: no pam_faillock authfail line"
  if grep -qE 'pam_faillock\.so.*\bdeny=' "$f"; then
    die "$f: deny= set on a PAM line; it would override faillock.conf"
  fi
done

deny="$(awk -F= '/^\s*deny\s*=/{gsub(/ /,"",$2); print $2}' "$FAILLOCK_CONF")"
[[ "$deny" == 3 ]] || die "faillock.conf deny is '$deny'"

authselect check || die "authselect check failed after changes"
log "faillock: deny=3 fail_interval=900 unlock_time=0 (profile ${profile})"
