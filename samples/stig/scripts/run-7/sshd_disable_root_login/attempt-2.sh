#!/usr/bin/env bash
# Rule: sshd_disable_root_login  (attempt 2)
# Attempt 1 ended the drop-in with a Match block. Because the drop-in is
# included at the top of sshd_config, every directive read after it
# (50-redhat.conf, the main file) landed inside that Match block and sshd
# refused to start. No Match block this time, and validate before restart.
set -euo pipefail

DROPIN=/etc/ssh/sshd_config.d/00-stig.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"

install -d -m 0755 /etc/ssh/sshd_config.d
touch "$DROPIN"
cp -a "$DROPIN" "${DROPIN}.bak.${TS}"
chmod 0600 "$DROPIN"

if grep -qiE '^\s*PermitRootLogin\b' "$DROPIN"; then
  sed -i -E 's/^\s*PermitRootLogin\b.*/PermitRootLogin no/I' "$DROPIN"
else
  echo 'PermitRootLogin no' >> "$DROPIN"
fi
if grep -qiE '^\s*Match\b' "$DROPIN"; then
  echo "Match block present in $DROPIN; refusing to continue" >&2
  exit 1
fi

if ! sshd -t; then
  cp -a "${DROPIN}.bak.${TS}" "$DROPIN"
  echo "sshd -t failed; drop-in restored" >&2
  exit 1
fi
systemctl restart sshd
systemctl is-active --quiet sshd

[[ "$(sshd -T | awk '$1=="permitrootlogin"{print $2}')" == no ]]
echo "PermitRootLogin no"
