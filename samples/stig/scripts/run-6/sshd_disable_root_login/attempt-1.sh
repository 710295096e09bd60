#!/usr/bin/env bash
# Rule: sshd_disable_root_login
set -euo pipefail

DROPIN=/etc/ssh/sshd_config.d/00-stig.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"

install -d -m 0755 /etc/ssh/sshd_config.d
if [[ -f "$DROPIN" ]]; then
  cp -a "$DROPIN" "${DROPIN}.bak.${TS}"
fi
touch "$DROPIN"
chmod 0600 "$DROPIN"

if grep -qiE '^\s*PermitRootLogin\b' "$DROPIN"; then
  sed -i -E 's/^\s*PermitRootLogin\b.*/PermitRootLogin no/I' "$DROPIN"
else
  echo 'PermitRootLogin no' >> "$DROPIN"
fi

# 00-stig.conf is read first through the Include at the top of sshd_config
grep -nE '^\s*Include\b' /etc/ssh/sshd_config || true

if ! sshd -t; then
  echo "sshd -t failed, restoring previous drop-in" >&2
  if [[ -f "${DROPIN}.bak.${TS}" ]]; then cp -a "${DROPIN}.bak.${TS}" "$DROPIN"; else rm -f "$DROPIN"; fi
  exit 1
fi
systemctl reload sshd

effective="$(sshd -T -C user=root,host=localhost,addr=127.0.0.1 | awk '$1=="permitrootlogin"{print $2}')"
[[ "$effective" == "no" ]] || { echo "effective PermitRootLogin is '$effective'" >&2; exit 1; }
echo "PermitRootLogin no is effective"
