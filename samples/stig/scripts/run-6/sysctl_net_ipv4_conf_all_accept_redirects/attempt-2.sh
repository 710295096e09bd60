#!/usr/bin/env bash
# Rule: sysctl_net_ipv4_conf_all_accept_redirects  (attempt 2)
# The check reads every sysctl configuration file, and
# /etc/sysctl.d/60-router-tuning.conf sets the key to 1. Put the value in a
# drop-in of our own and neutralise every conflicting line.
set -euo pipefail

KEY=net.ipv4.conf.all.accept_redirects
WANT=0
DROPIN=/etc/sysctl.d/99-stig.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"
SEARCH=(/etc/sysctl.conf /etc/sysctl.d /run/sysctl.d /usr/local/lib/sysctl.d /usr/lib/sysctl.d)

# Precedence: systemd-sysctl reads *.conf from /etc/sysctl.d, /run/sysctl.d,
# /usr/local/lib/sysctl.d and /usr/lib/sysctl.d sorted by file name across
# all of them (a name in /etc masks the same name in /usr/lib), and
# /etc/sysctl.conf through the 99-sysctl.conf link. The scanner is stricter:
# any file with a different value fails the rule.

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

key_re() { printf '%s' "${KEY//./[./]}"; }   # sysctl accepts . or / as separator

# print "file:line:value" for every active setting of KEY
find_settings() {
  grep -rHnE --include='*.conf' "^\s*$(key_re)\s*=" "${SEARCH[@]}" 2>/dev/null \
    | sed -E 's/^([^:]+):([0-9]+):[^=]*=\s*([^[:space:]#]*).*/\1:\2:\3/'
}

set_in_dropin() {
  install -d -m 0755 "$(dirname "$DROPIN")"
  touch "$DROPIN"
  if grep -qE "^\s*$(key_re)\s*=" "$DROPIN"; then
    sed -i -E "s|^\s*$(key_re)\s*=.*|${KEY} = ${WANT}|" "$DROPIN"
  else
    echo "${KEY} = ${WANT}" >> "$DROPIN"
  fi
  chmod 0644 "$DROPIN"
}

comment_out() {
  local file="$1" line="$2"
  if [[ "$file" == /usr/lib/* ]]; then
    # vendor files: shadow with a same-named file in /etc/sysctl.d instead
    local shadow
    shadow="/etc/sysctl.d/$(basename "$file")"
    [[ -e "$shadow" ]] || cp -a -- "$file" "$shadow"
    file="$shadow"
  fi
  [[ -e "${file}.bak.${TS}" ]] || cp -a -- "$file" "${file}.bak.${TS}"
  sed -i -E "${line}s|^|# disabled by STIG remediation ${TS}: |" "$file"
  log "commented out ${file}:${line}"
}

report() {
  log "settings of ${KEY} after the change:"
  find_settings | while IFS=: read -r file line value; do
    log "  ${file}:${line} = ${value}"
  done
}

sysctl -n "$KEY" >/dev/null || die "unknown sysctl key ${KEY}"
log "running value before: $(sysctl -n "$KEY")"

set_in_dropin

# conflicting values anywhere else
while IFS=: read -r file line value; do
  [[ "$file" == "$DROPIN" ]] && continue
  if [[ "$value" != "$WANT" ]]; then
    log "conflict: ${file}:${line} sets ${value}"
    comment_out "$file" "$line"
  fi
done < <(find_settings)

# apply every file in the documented order and verify
sysctl --system >/dev/null
[[ "$(sysctl -n "$KEY")" == "$WANT" ]] || die "running value is $(sysctl -n "$KEY")"

bad="$(find_settings | awk -F: -v want="$WANT" '$3 != want')"
[[ -z "$bad" ]] || die "still conflicting: ${bad}"
report
log "${KEY} = ${WANT} (runtime and every config file)"
