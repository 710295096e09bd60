#!/usr/bin/env bash
# Rule: configure_crypto_policy
# FIPS crypto policy plus FIPS kernel mode, so policy and kernel agree.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
BACKENDS=/etc/crypto-policies/back-ends

echo "before: policy=$(update-crypto-policies --show) fips=$(cat /proc/sys/crypto/fips_enabled)"

# back-ends must be symlinks; a regular file is a local override
mapfile -t overrides < <(find "$BACKENDS" -maxdepth 1 -type f -name '*.config')
if (( ${#overrides[@]} > 0 )); then
  tar -czf "/root/crypto-backends.${TS}.tar.gz" -C / "${BACKENDS#/}"
  rm -f -- "${overrides[@]}"
  echo "removed ${#overrides[@]} local back-end override(s)"
fi

update-crypto-policies --set FIPS
[[ "$(update-crypto-policies --show)" == FIPS ]]

# kernel side: fips=1 on the command line + FIPS initramfs
fips-mode-setup --enable
fips-mode-setup --check || true

find "$BACKENDS" -maxdepth 1 -name '*.config' ! -type l -print -quit | grep -q . && {
  echo "back-end override still present" >&2; exit 1; }
echo "crypto policy FIPS set; FIPS mode enabled (active after reboot)"
