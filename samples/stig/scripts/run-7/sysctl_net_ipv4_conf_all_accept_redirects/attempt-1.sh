#!/usr/bin/env bash
# Rule: sysctl_net_ipv4_conf_all_accept_redirects
# Persist the value in /etc/sysctl.d/99-stig.conf, neutralise conflicting
# settings in every directory the scanner reads, and apply it right away.
set -euo pipefail

KEY=net.ipv4.conf.all.accept_redirects
WANT=0
DROPIN=/etc/sysctl.d/99-stig.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"
DIRS=(/etc/sysctl.d /run/sysctl.d /usr/local/lib/sysctl.d /usr/lib/sysctl.d)

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

pattern="^[[:space:]]*${KEY//./[./]}[[:space:]]*="

config_files() {
  printf '%s\n' /etc/sysctl.conf
  local d
  for d in "${DIRS[@]}"; do
    [[ -d "$d" ]] || continue
    find "$d" -maxdepth 1 -type f -name '*.conf'
  done
}

disable_line() {
  local file="$1" lineno="$2" target="$1"
  if [[ "$file" == /usr/* ]]; then
    # never edit vendor files; an /etc file of the same name overrides them
    target="/etc/sysctl.d/$(basename "$file")"
    if [[ ! -e "$target" ]]; then cp -a -- "$file" "$target"; fi
  fi
  if [[ ! -e "${target}.bak.${TS}" ]]; then cp -a -- "$target" "${target}.bak.${TS}"; fi
  sed -i -E "${lineno}s|^|# STIG ${TS}: |" "$target"
  log "disabled ${target}:${lineno}"
}

# 0. the key must exist on this kernel; note where it is set today
sysctl -n "$KEY" >/dev/null || die "unknown sysctl key ${KEY}"
log "running value before: $(sysctl -n "$KEY")"
while IFS= read -r file; do
  grep -nE "$pattern" "$file" | sed "s|^|  ${file}:|" >&2 || true
done < <(config_files)

# 1. our drop-in
install -d -m 0755 /etc/sysctl.d
if [[ -f "$DROPIN" ]]; then cp -a -- "$DROPIN" "${DROPIN}.bak.${TS}"; fi
touch "$DROPIN"
if grep -qE "$pattern" "$DROPIN"; then
  sed -i -E "s|${pattern}.*|${KEY} = ${WANT}|" "$DROPIN"
else
  echo "${KEY} = ${WANT}" >> "$DROPIN"
fi

# 2. conflicting values elsewhere
conflicts=0
while IFS= read -r file; do
  [[ "$file" == "$DROPIN" ]] && continue
  while IFS=: read -r lineno text; do
    value="$(sed -E 's/^[^=]*=[[:space:]]*([^[:space:]#]*).*/\1/' <<< "$text")"
    if [[ "$value" != "$WANT" ]]; then
      log "conflict ${file}:${lineno}: ${text}"
      disable_line "$file" "$lineno"
      conflicts=$((conflicts + 1))
    fi
  done < <(grep -nE "$pattern" "$file" || true)
done < <(config_files)
log "conflicting settings disabled: ${conflicts}"

# 3. apply now, then reload everything so the file order is honoured
sysctl -w "${KEY}=${WANT}"
sysctl --system >/dev/null

# 4. verify runtime and configuration
[[ "$(sysctl -n "$KEY")" == "$WANT" ]] || die "runtime value is $(sysctl -n "$KEY")"
while IFS= read -r file; do
  if grep -nE "$pattern" "$file" | grep -vE "=[[:space:]]*${WANT}([[:space:]]|$)" >/dev/null; then
    die "${file} still sets a different value"
  fi
done < <(config_files)
if (( conflicts > 0 )); then
  log "backups of edited files: *.bak.${TS} (not read by systemd-sysctl)"
fi
log "${KEY} = ${WANT} everywhere"
