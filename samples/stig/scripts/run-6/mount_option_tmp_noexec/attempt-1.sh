#!/usr/bin/env bash
# Rule: mount_option_tmp_noexec
# /tmp is a separate tmpfs; add the options to the running mount.
set -euo pipefail

findmnt -n /tmp
mount -o remount,nodev,nosuid,noexec /tmp

findmnt -n -o OPTIONS /tmp | tr ',' '\n' | grep -x noexec
echo "/tmp remounted noexec"
