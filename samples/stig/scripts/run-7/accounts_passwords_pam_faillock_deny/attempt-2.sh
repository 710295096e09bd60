#!/usr/bin/env bash
# Rule: accounts_passwords_pam_faillock_deny  (attempt 2)
# Attempt 1 put an authfail line at the top of the auth stack by hand and
# every logon (root on the console included) was counted as a failure.
# This time: PAM stays under authselect's control, deny lives in
# faillock.conf.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
FAILLOCK_CONF=/etc/security/faillock.conf
PAM_FILES=(/etc/pam.d/system-auth /etc/pam.d/password-auth)

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

backup() {
  local f real
  for f in "$@"; do
    [[ -e "$f" ]] || continue
    real="$(readlink -f "$f")"
    cp -a -- "$real" "${real}.bak.${TS}"
  done
}

set_conf() {
  local key="$1" value="$2"
  if grep -qE "^\s*${key}\s*=" "$FAILLOCK_CONF"; then
    sed -i -E "s|^\s*${key}\s*=.*|${key} = ${value}|" "$FAILLOCK_CONF"
  else
    printf '%s = %s\n' "$key" "$value" >> "$FAILLOCK_CONF"
  fi
}

command -v authselect >/dev/null || die "authselect not installed"
backup "$FAILLOCK_CONF" "${PAM_FILES[@]}"

current="$(authselect current --raw)"
profile="${current%% *}"
features="${current#"$profile"}"
log "authselect: profile=${profile} features=${features:-none}"

# 0. Make sure authselect still owns the PAM files. If someone edited them
#    by hand, re-select the same profile with the same features first.
if ! authselect check; then
  log "PAM files were modified outside authselect; re-selecting ${profile}"
  # shellcheck disable=SC2086
  authselect select "$profile" $features --force
  authselect check || die "authselect check still failing after re-select"
fi

# 1. faillock in the generated stacks
if [[ " ${features} " != *" with-faillock "* ]]; then
  authselect enable-feature with-faillock
fi
authselect apply-changes

# 2. policy in faillock.conf
[[ -f "$FAILLOCK_CONF" ]] || die "missing $FAILLOCK_CONF"
set_conf deny 3
set_conf fail_interval 900
set_conf unlock_time 0

# 3. verify the generated stacks and the configuration
for f in "${PAM_FILES[@]}"; do
  first_auth="$(grep -m1 -E '^auth\s' "$f")"
  [[ "$first_auth" == *"pam_env.so"* || "$first_auth" == *"pam_faillock.so preauth"* ]] \
    || die "$f: unexpected first auth line: ${first_auth}"
  grep -qE '^auth\s+required\s+pam_faillock\.so\s+preauth' "$f" || die "$f: no preauth line"
  grep -qE '^auth\s+\[default=die\]\s+pam_faillock\.so\s+authfail' "$f" || die "$f: no authfail line"
  grep -qE '^account\s+required\s+pam_faillock\.so' "$f" || die "$f: no account line"
  if grep -qE 'pam_faillock\.so.*\bdeny=' "$f"; then
    die "$f: deny= on a PAM line would override faillock.conf"
  fi
done

grep -qE '^\s*deny\s*=\s*3\s*$' "$FAILLOCK_CONF" || die "deny is not 3"
authselect check

# 4. show the result for the log
authselect current >&2
grep -E '^\s*(deny|fail_interval|unlock_time)\s*=' "$FAILLOCK_CONF" >&2
for f in "${PAM_FILES[@]}"; do
  log "$f: $(grep -c pam_faillock "$f") pam_faillock lines"
done
log "faillock deny=3 via authselect with-faillock + faillock.conf"
