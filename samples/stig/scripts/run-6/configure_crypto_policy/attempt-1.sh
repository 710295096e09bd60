#!/usr/bin/env bash
# Rule: configure_crypto_policy  (system-wide policy must be FIPS)
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
BACKENDS=/etc/crypto-policies/back-ends
WANT=FIPS

echo "current policy: $(update-crypto-policies --show)"

# Local overrides: back-end files must be symlinks into /usr/share/crypto-policies.
overrides=()
for f in "$BACKENDS"/*.config; do
  [[ -e "$f" ]] || continue
  if [[ ! -L "$f" ]]; then
    overrides+=("$f")
  fi
done

if (( ${#overrides[@]} > 0 )); then
  tar -czf "/root/crypto-backends.${TS}.tar.gz" -C / "${BACKENDS#/}"
  for f in "${overrides[@]}"; do
    echo "removing local override $f (saved in /root/crypto-backends.${TS}.tar.gz)"
    rm -f -- "$f"
  done
fi

update-crypto-policies --set "$WANT"

# Verify the policy and that every back-end now points at the FIPS policy.
[[ "$(update-crypto-policies --show)" == "$WANT" ]]
for f in "$BACKENDS"/*.config; do
  target="$(readlink -f "$f")"
  case "$target" in
    /usr/share/crypto-policies/FIPS/*) ;;
    *) echo "unexpected back-end target: $f -> $target" >&2; exit 1 ;;
  esac
done
echo "crypto policy is $WANT; kernel FIPS mode left as it is"
