#!/usr/bin/env bash
# Rule: set_firewalld_default_zone  (default zone = drop)
set -euo pipefail

cp -a /etc/firewalld/firewalld.conf "/etc/firewalld/firewalld.conf.bak.$(date -u +%Y%m%dT%H%M%SZ)"

firewall-cmd --set-default-zone=drop
# keep ssh reachable in the new default zone
firewall-cmd --permanent --zone=drop --add-service=ssh

firewall-cmd --get-default-zone
firewall-cmd --permanent --zone=drop --list-services
