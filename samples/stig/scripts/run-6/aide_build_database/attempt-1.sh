#!/usr/bin/env bash
# Rule: aide_build_database
# Install AIDE and build the baseline database.
set -euo pipefail

dnf -y install aide

# first run takes a few minutes on a full root filesystem
aide --init

ls -l /var/lib/aide/
echo "AIDE database initialised"
