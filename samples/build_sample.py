#!/usr/bin/env python3
"""Build the hand-written STIG sample data set (samples/stig/).

Two consecutive STIG hardening runs of the Worker, run-6 and run-7, with the
tip corpus, the retrieval + attempt logs (JSONL, the format the scoring pass
reads) and hand-written gold labels saying, for every retrieval, whether the
Worker's fix script followed the retrieved tip.

Everything below is written out by hand: tip texts, fix scripts, which tips
were retrieved with which similarity, each attempt's result and each gold
label with its reason. This file only lays the pieces out as files, assigns
timestamps and cross-checks that every retrieved tip carries a label.
The output is deterministic: running it twice gives byte-identical files.

    python3 samples/build_sample.py          # writes samples/stig/*
    python3 samples/check_sample.py          # validates and prints counts

Standard library only.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

OUT = Path(__file__).resolve().parent / "stig"
WITNESS = "harden_sshd_macs_openssh_conf_crypto_policy"

# ---------------------------------------------------------------------------
# Tips: (tip_ref, rule_id or None, body)
# ---------------------------------------------------------------------------

TIPS: list[tuple[str, str | None, str]] = [
    # --- general tips (rule_id null) --------------------------------------
    ("gen-backup-before-edit", None,
     "Always back up a file before editing it (cp -a FILE FILE.bak.$(date +%Y%m%d%H%M%S)) so a failed "
     "fix can be rolled back by the next attempt."),
    ("gen-sshd-validate", None,
     "Validate the sshd configuration with `sshd -t` before restarting or reloading sshd; a bad directive "
     "otherwise leaves the host without SSH and the evaluator marks it unhealthy."),
    ("gen-sshd-restart-skip-check", None,
     "After changing sshd settings just run `systemctl restart sshd`; the unit validates the configuration "
     "itself, so a separate `sshd -t` is redundant and only slows the fix down."),
    ("gen-dropin-over-main", None,
     "Prefer drop-in files (sshd_config.d, sysctl.d, modprobe.d, pwquality.conf.d) over editing the main "
     "config file; they survive package updates and are easy to revert."),
    ("gen-idempotent-edit", None,
     "Make edits idempotent: replace an existing `Key value` line with an anchored "
     "`sed -i 's/^\\s*Key\\b.*/Key value/'` and append only when `grep -q '^Key'` finds nothing, so a "
     "re-run never duplicates lines."),
    ("gen-verify-effective", None,
     "End every fix with a check of the effective value (sshd -T, sysctl -n, auditctl -l/-s, "
     "authselect current, faillock) rather than only grepping the file you just wrote."),
    ("gen-authselect-no-hand-edit", None,
     "On authselect-managed hosts never hand-edit /etc/pam.d/system-auth or password-auth; use authselect "
     "features or a custom profile, or the next `authselect apply-changes` wipes the change."),
    ("gen-service-reload", None,
     "Reload rather than restart services where possible (`systemctl reload sshd`, `firewall-cmd --reload`) "
     "so the evaluator's session is not dropped."),
    ("gen-dnf-timeout", None,
     "Package installs can hang on unreachable mirrors: check `rpm -q PKG` first and install with "
     "`dnf -y --setopt=timeout=30 install PKG` so a fix never stalls on the network."),
    ("gen-reboot-pending", None,
     "Settings that only take effect after a reboot (kernel arguments, FIPS mode, immutable audit rules) "
     "cannot be verified live; write the persistent configuration and verify that, don't force it at "
     "runtime."),

    # --- harden_sshd_macs_openssh_conf_crypto_policy (the ADR witness) -----
    ("sshd-macs-cp-1", WITNESS,
     "Restrict SSH MACs through the system crypto policy, not by hand: run `update-crypto-policies --set "
     "FIPS` (or DEFAULT plus a sub-policy). Do not edit /etc/ssh/ssh_config manually; the policy back-end "
     "is what OpenSSH reads."),
    ("sshd-macs-cp-2", WITNESS,
     "To allow only SHA-2 MACs, write a sub-policy module /etc/crypto-policies/policies/modules/"
     "STIG-MACS.pmod containing `mac@SSH = HMAC-SHA2-512 HMAC-SHA2-256` and apply it with "
     "`update-crypto-policies --set DEFAULT:STIG-MACS`."),
    ("sshd-macs-cp-3", WITNESS,
     "Never put a MACs line into /etc/ssh/ssh_config or overwrite that file for this rule; it is owned by "
     "openssh-clients. Change MACs only with update-crypto-policies: the back-end "
     "(/etc/crypto-policies/back-ends/openssh.config) is the source of truth."),
    ("sshd-macs-cp-4", WITNESS,
     "After changing the crypto policy, confirm it with `update-crypto-policies --show` and "
     "`grep -i '^MACs' /etc/crypto-policies/back-ends/openssh.config`, then restart sshd so new sessions "
     "pick it up."),
    ("sshd-macs-cp-5", WITNESS,
     "If the MACs check still fails after a policy change, re-apply the policy with "
     "`update-crypto-policies --set <policy>` and restart sshd; the back-end is often stale. Still don't add "
     "MACs lines to ssh_config by hand."),

    # --- configure_crypto_policy ---------------------------------------------
    ("crypto-policy-set-fips", "configure_crypto_policy",
     "Set the system-wide policy with `update-crypto-policies --set FIPS` and check it with "
     "`update-crypto-policies --show`; never hand-edit files under /etc/crypto-policies/back-ends/."),
    ("crypto-policy-backend-symlinks", "configure_crypto_policy",
     "Before changing the policy, check that every file in /etc/crypto-policies/back-ends/ is a symlink "
     "into /usr/share/crypto-policies; a regular file there is a local override that survives policy "
     "changes and fails the scan."),
    ("crypto-policy-fips-mode-setup", "configure_crypto_policy",
     "The crypto policy rule also expects the kernel in FIPS mode: run `fips-mode-setup --enable` in the "
     "same fix so kernel and policy agree."),

    # --- sshd_disable_root_login ---------------------------------------------
    ("sshd-root-dropin-first", "sshd_disable_root_login",
     "Set `PermitRootLogin no` in a drop-in that sorts first, e.g. /etc/ssh/sshd_config.d/00-stig.conf; "
     "sshd keeps the first value it reads, and 50-redhat.conf and the main file come later."),
    ("sshd-root-match-exception", "sshd_disable_root_login",
     "If root still needs key-only access from the management bastion, end the drop-in with a "
     "`Match Address <bastion-ip>` block setting `PermitRootLogin prohibit-password`; the scanner only "
     "reads the global value."),

    # --- sshd_set_max_auth_tries ---------------------------------------------
    ("sshd-maxauth-dropin", "sshd_set_max_auth_tries",
     "Set `MaxAuthTries 4` (or lower) in an early drop-in such as /etc/ssh/sshd_config.d/00-stig.conf and "
     "confirm with `sshd -T | grep maxauthtries`; an earlier file may already set a higher value."),
    ("sshd-maxauth-client-identities", "sshd_set_max_auth_tries",
     "A low MaxAuthTries breaks clients that offer many agent keys; set `IdentitiesOnly yes` for the "
     "management hosts in the client config so only the named key is tried."),

    # --- sshd_set_idle_timeout -----------------------------------------------
    ("sshd-idle-interval-600", "sshd_set_idle_timeout",
     "Set `ClientAliveInterval 600` and `ClientAliveCountMax 1`; current RHEL STIG versions expect "
     "CountMax 1, not the old 0."),
    ("sshd-idle-countmax-zero", "sshd_set_idle_timeout",
     "Use `ClientAliveCountMax 0` together with `ClientAliveInterval 600` so idle sessions are cut exactly "
     "at the interval; that is how the idle timeout is enforced."),
    ("sshd-idle-effective-value", "sshd_set_idle_timeout",
     "Check the effective values with `sshd -T | grep -i clientalive`; a drop-in that sorts earlier (for "
     "example from cloud-init) silently wins over your setting."),

    # --- sshd_disable_x11_forwarding -----------------------------------------
    ("sshd-x11-inplace", "sshd_disable_x11_forwarding",
     "RHEL ships `X11Forwarding yes` in the main sshd_config; change that line in place to "
     "`X11Forwarding no` instead of adding a second line, so there is one authoritative value."),
    ("sshd-x11-remove-xauth", "sshd_disable_x11_forwarding",
     "Remove the xorg-x11-xauth package on servers without a GUI; X11 forwarding cannot work without xauth "
     "even if someone re-enables it."),

    # --- accounts_passwords_pam_faillock_deny --------------------------------
    ("faillock-authselect-feature", "accounts_passwords_pam_faillock_deny",
     "Enable faillock with `authselect enable-feature with-faillock` and set `deny = 3` in "
     "/etc/security/faillock.conf; on authselect hosts the PAM lines are generated for you."),
    ("faillock-first-auth-line", "accounts_passwords_pam_faillock_deny",
     "Insert `auth required pam_faillock.so authfail deny=3 unlock_time=0` as the very first auth line of "
     "/etc/pam.d/system-auth and password-auth so every logon attempt is counted."),
    ("faillock-authselect-check", "accounts_passwords_pam_faillock_deny",
     "Run `authselect check` first; if the PAM files were modified outside authselect, re-select the "
     "current profile with `--force` and its existing features before enabling with-faillock."),

    # --- accounts_passwords_pam_faillock_deny_root ---------------------------
    ("faillock-root-even-deny-conf", "accounts_passwords_pam_faillock_deny_root",
     "Set `even_deny_root` in /etc/security/faillock.conf rather than on the pam_faillock lines; the "
     "with-faillock authselect feature must be enabled for it to matter."),
    ("faillock-root-selftest", "accounts_passwords_pam_faillock_deny_root",
     "Prove the root lockout works before handing back: feed three wrong passwords for root (pamtester or "
     "su in a loop) and check that `faillock --user root` shows the account locked."),
    ("faillock-root-reset-tally", "accounts_passwords_pam_faillock_deny_root",
     "Clear root's tally with `faillock --user root --reset` after enabling even_deny_root; failed probes "
     "from earlier scans would otherwise lock root out immediately."),

    # --- accounts_password_pam_minlen ---------------------------------------
    ("pwquality-minlen-conf", "accounts_password_pam_minlen",
     "Set `minlen = 15` in /etc/security/pwquality.conf or a file in /etc/security/pwquality.conf.d/; "
     "pam_pwquality reads both and the scanner checks both."),
    ("pwquality-minlen-pam-args", "accounts_password_pam_minlen",
     "Put `minlen=15` directly on the pam_pwquality.so line in system-auth and password-auth; module "
     "arguments override pwquality.conf, so that is the reliable place."),

    # --- accounts_password_pam_ucredit --------------------------------------
    ("pwquality-credit-negative", "accounts_password_pam_ucredit",
     "For the credit rules use negative values (`ucredit = -1`): a negative value requires that many "
     "characters of the class, a positive one only grants length credit."),
    ("pwquality-credit-all-classes", "accounts_password_pam_ucredit",
     "Set ucredit, lcredit, dcredit and ocredit together in one pwquality drop-in; the four STIG credit "
     "rules are always checked together."),

    # --- auditd_data_retention_space_left_action ----------------------------
    ("auditd-space-left-action-email", "auditd_data_retention_space_left_action",
     "Set `space_left_action = email` and `action_mail_acct = root` in /etc/audit/auditd.conf and restart "
     "with `service auditd restart`; systemctl refuses to restart auditd."),
    ("auditd-space-left-percent", "auditd_data_retention_space_left_action",
     "Express space_left as a percentage (`space_left = 25%`) so the threshold scales with the size of "
     "/var/log/audit."),

    # --- audit_rules_immutable ----------------------------------------------
    ("audit-immutable-rules-file", "audit_rules_immutable",
     "Put `-e 2` as the only line of a rules file that sorts last, e.g. /etc/audit/rules.d/"
     "99-finalize.rules, and regenerate with `augenrules`; immutability then applies from the next boot."),
    ("audit-immutable-auditctl-now", "audit_rules_immutable",
     "Make the audit configuration immutable right away with `auditctl -e 2`; the scanner checks the "
     "running kernel, so waiting for a reboot fails the rule."),

    # --- audit_rules_privileged_commands_sudo -------------------------------
    ("audit-priv-sudo-rule", "audit_rules_privileged_commands_sudo",
     "Audit sudo with `-a always,exit -F path=/usr/bin/sudo -F perm=x -F auid>=1000 -F auid!=unset "
     "-k privileged` in its own file under /etc/audit/rules.d/, then `augenrules --load` and check "
     "`auditctl -l`."),
    ("audit-priv-find-setuid", "audit_rules_privileged_commands_sudo",
     "Generate the privileged-command rules for every setuid/setgid binary at once with "
     "`find / -xdev -type f -perm /6000`; the per-command STIG rules then all pass together."),

    # --- audit_rules_time_adjtimex ------------------------------------------
    ("audit-time-both-arches", "audit_rules_time_adjtimex",
     "Write the adjtimex rule for both architectures (`-F arch=b32` and `-F arch=b64`) even on x86_64; "
     "the scanner requires both lines."),
    ("audit-time-combine-syscalls", "audit_rules_time_adjtimex",
     "Combine adjtimex, settimeofday and clock_settime into a single `-S` list per architecture with key "
     "`audit_time_rules` to keep the rule count down."),

    # --- grub2_audit_argument ------------------------------------------------
    ("grub-audit-grubby", "grub2_audit_argument",
     "Add the kernel argument with `grubby --update-kernel=ALL --args=audit=1` and also append it to "
     "GRUB_CMDLINE_LINUX in /etc/default/grub so future kernels inherit it."),
    ("grub-audit-edit-grubcfg", "grub2_audit_argument",
     "Append audit=1 to every `linux` line in /boot/grub2/grub.cfg with sed; that is the file the boot "
     "loader actually reads."),

    # --- set_firewalld_default_zone -----------------------------------------
    ("firewalld-allow-ssh-before-drop", "set_firewalld_default_zone",
     "Before switching the default zone to drop, add ssh to the drop zone permanently "
     "(`firewall-cmd --permanent --zone=drop --add-service=ssh`), reload, then "
     "`firewall-cmd --set-default-zone=drop`; otherwise the evaluator loses its session."),
    ("firewalld-edit-conf-drop", "set_firewalld_default_zone",
     "Set `DefaultZone=drop` in /etc/firewalld/firewalld.conf and run `firewall-cmd --reload`; the drop "
     "zone keeps established SSH sessions, so no extra rules are needed."),

    # --- sudo_remove_nopasswd ------------------------------------------------
    ("sudo-nopasswd-visudo-copy", "sudo_remove_nopasswd",
     "Edit a copy of each sudoers file that contains NOPASSWD, check it with `visudo -cf <copy>`, and only "
     "then move it into place; a syntax error in sudoers disables sudo for everyone."),
    ("sudo-nopasswd-delete-lines", "sudo_remove_nopasswd",
     "Remove NOPASSWD by deleting the offending lines: `sed -i '/NOPASSWD/d' /etc/sudoers "
     "/etc/sudoers.d/*` is quick and leaves no partial rules behind."),

    # --- aide_build_database -------------------------------------------------
    ("aide-init-move-db", "aide_build_database",
     "`aide --init` writes /var/lib/aide/aide.db.new.gz; move it to /var/lib/aide/aide.db.gz or "
     "`aide --check` (and the scanner) finds no database."),
    ("aide-exclude-volatile", "aide_build_database",
     "Exclude volatile paths such as /var/log/journal and /var/lib/sss/db from the AIDE config before the "
     "first init, or every check reports thousands of changes."),

    # --- aide_periodic_cron_checking ----------------------------------------
    ("aide-cron-daily-entry", "aide_periodic_cron_checking",
     "Schedule the check with a cron entry such as `05 4 * * * root /usr/sbin/aide --check | /bin/mail "
     "-s aide root` in /etc/cron.d/; the scanner looks for aide in the cron tables."),
    ("aide-systemd-timer", "aide_periodic_cron_checking",
     "Use a systemd timer (aidecheck.timer + aidecheck.service) for the periodic AIDE check; it logs to "
     "the journal and is easier to monitor than cron."),

    # --- sysctl_net_ipv4_conf_all_accept_redirects ---------------------------
    ("sysctl-dropin-scan-conflicts", "sysctl_net_ipv4_conf_all_accept_redirects",
     "Put the value in /etc/sysctl.d/99-stig.conf and grep /etc/sysctl.conf, /etc/sysctl.d, /run/sysctl.d "
     "and /usr/lib/sysctl.d for the same key; comment out conflicting values, the scanner checks every "
     "file."),
    ("sysctl-runtime-write", "sysctl_net_ipv4_conf_all_accept_redirects",
     "`sysctl -w net.ipv4.conf.all.accept_redirects=0` applies the value immediately without waiting for "
     "a reboot; use it so the live check sees the new value."),

    # --- sysctl_kernel_dmesg_restrict ----------------------------------------
    ("sysctl-dmesg-restrict-value", "sysctl_kernel_dmesg_restrict",
     "Set `kernel.dmesg_restrict = 1` in a sysctl.d file so unprivileged users cannot read the kernel "
     "ring buffer."),
    ("sysctl-apply-system", "sysctl_kernel_dmesg_restrict",
     "Apply sysctl.d files with `sysctl --system`; plain `sysctl -p` only reads /etc/sysctl.conf and "
     "silently skips your drop-in."),

    # --- kernel_module_usb-storage_disabled ----------------------------------
    ("kmod-install-false-blacklist", "kernel_module_usb-storage_disabled",
     "In /etc/modprobe.d/usb-storage.conf put both `install usb-storage /bin/false` and "
     "`blacklist usb-storage`; blacklist alone only stops autoloading and the scanner wants the install "
     "line."),
    ("kmod-unload-now", "kernel_module_usb-storage_disabled",
     "Also unload the module now with `modprobe -r usb-storage` when `lsmod` shows it; the modprobe.d "
     "config only affects future loads."),

    # --- mount_option_tmp_noexec ---------------------------------------------
    ("tmp-fstab-entry", "mount_option_tmp_noexec",
     "The scanner reads /etc/fstab: add `tmpfs /tmp tmpfs defaults,mode=1777,nodev,nosuid,noexec 0 0` even "
     "when /tmp comes from tmp.mount; systemd generates the mount unit from fstab."),
    ("tmp-remount-live", "mount_option_tmp_noexec",
     "Apply the options to the running system with `mount -o remount,nodev,nosuid,noexec /tmp`; a remount "
     "works while files in /tmp are open."),
    ("tmp-restart-mount-unit", "mount_option_tmp_noexec",
     "For a systemd-managed /tmp, put the options in /etc/systemd/system/tmp.mount.d/options.conf and run "
     "`systemctl daemon-reload && systemctl restart tmp.mount`."),

    # --- package_telnet-server_removed ---------------------------------------
    ("pkg-telnet-remove-verify", "package_telnet-server_removed",
     "Remove the package with `dnf -y remove telnet-server` and confirm with `rpm -q telnet-server`; stop "
     "and disable telnet.socket first if it is active."),
    ("pkg-remove-check-deps", "package_telnet-server_removed",
     "Run `dnf remove --assumeno <pkg>` first to see what else would be removed; stop if the removal "
     "would take other packages with it."),

    # --- service_kdump_disabled ----------------------------------------------
    ("kdump-disable-mask", "service_kdump_disabled",
     "Disable and mask kdump with `systemctl disable --now kdump.service && systemctl mask "
     "kdump.service` so no dependency can start it again."),
    ("kdump-remove-crashkernel", "service_kdump_disabled",
     "Once kdump is off, remove the crashkernel= argument with `grubby --update-kernel=ALL "
     "--remove-args=crashkernel` to free the reserved memory."),

    # --- sshd_enable_warning_banner ------------------------------------------
    ("sshd-banner-issue-dropin", "sshd_enable_warning_banner",
     "Set `Banner /etc/issue` in an early sshd drop-in (00-stig.conf); the STIG expects the same DoD "
     "notice on the console and for SSH."),

    # --- banner_etc_issue ----------------------------------------------------
    ("banner-issue-heredoc", "banner_etc_issue",
     "Write the full DoD notice to /etc/issue with a quoted heredoc (`cat <<'EOF'`) so the text is copied "
     "exactly; the check compares it word for word."),
    ("banner-issue-echo-escapes", "banner_etc_issue",
     "Write the banner with a single `echo -e` and `\\n` escapes so the whole text sits on one line of the "
     "script and can't be mangled by editors."),

    # --- selinux_state -------------------------------------------------------
    ("selinux-enforcing-config", "selinux_state",
     "Set `SELINUX=enforcing` in /etc/selinux/config and, if the host is currently permissive, switch at "
     "runtime with `setenforce 1`; check with `getenforce` and `sestatus`."),
    ("selinux-autorelabel", "selinux_state",
     "Touch /.autorelabel whenever the SELinux mode changes so files are relabeled on the next boot."),
]

# ---------------------------------------------------------------------------
# Fix scripts. Each is what the Worker actually submitted for one attempt.
# Naming: S_<rule short>_<run>_<attempt>.
# ---------------------------------------------------------------------------

DOD_BANNER = """\
You are accessing a U.S. Government (USG) Information System (IS) that is provided for USG-authorized use only.

By using this IS (which includes any device attached to this IS), you consent to the following conditions:

-The USG routinely intercepts and monitors communications on this IS for purposes including, but not limited to, penetration testing, COMSEC monitoring, network operations and defense, personnel misconduct (PM), law enforcement (LE), and counterintelligence (CI) investigations.

-At any time, the USG may inspect and seize data stored on this IS.

-Communications using, or data stored on, this IS are not private, are subject to routine monitoring, interception, and search, and may be disclosed or used for any USG-authorized purpose.

-This IS includes security measures (e.g., authentication and access controls) to protect USG interests--not for your personal benefit or privacy.

-Notwithstanding the above, using this IS does not constitute consent to PM, LE or CI investigative searching or monitoring of the content of privileged communications, or work product, related to personal representation or services by attorneys, psychotherapists, or clergy, and their assistants. Such communications and work product are private and confidential. See User Agreement for details.
"""

# ---- harden_sshd_macs_openssh_conf_crypto_policy (witness) ---------------

# run-6: the Worker ignores all five crypto-policy tips and rewrites the
# client config wholesale; dropping the Include line also drops the
# conflicting legacy drop-in, so the rule passes.
S_MACS_6_1 = r'''#!/usr/bin/env bash
# Rule: harden_sshd_macs_openssh_conf_crypto_policy
# Goal: the OpenSSH client may only offer FIPS-approved MACs
#       (hmac-sha2-512, hmac-sha2-256 and their -etm variants).
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
SSH_CONFIG=/etc/ssh/ssh_config
WANT_MACS="hmac-sha2-512-etm@openssh.com,hmac-sha2-256-etm@openssh.com,hmac-sha2-512,hmac-sha2-256"

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

backup() {
  local f="$1"
  [[ -f "$f" ]] || return 0
  cp -a -- "$f" "${f}.bak.${TS}"
  log "saved ${f}.bak.${TS}"
}

# What the client actually negotiates, after all includes are resolved.
current_macs() {
  ssh -G -F "$SSH_CONFIG" localhost 2>/dev/null | awk '$1 == "macs" {print $2}'
}

log "effective client MACs before change: $(current_macs)"

# The stock file pulls in /etc/ssh/ssh_config.d/*.conf at the top, and ssh
# keeps the first value it sees for an option, so whatever a drop-in says
# about MACs beats anything appended further down. Instead of chasing every
# drop-in, write the client config in full with the MACs we need and
# nothing that can override them.
backup "$SSH_CONFIG"

if compgen -G '/etc/ssh/ssh_config.d/*.conf' >/dev/null; then
  log "drop-ins that will no longer be read:"
  ls -1 /etc/ssh/ssh_config.d/*.conf >&2
fi

cat <<EOF > /etc/ssh/ssh_config
# /etc/ssh/ssh_config - system-wide OpenSSH client configuration
# Written by STIG remediation (harden_sshd_macs_openssh_conf_crypto_policy)
# on ${TS}. Previous version: ${SSH_CONFIG}.bak.${TS}
#
# The settings below used to come from ssh_config.d/50-redhat.conf.

Host *
    MACs ${WANT_MACS}
    GSSAPIAuthentication yes
    ForwardX11Trusted yes
    SendEnv LANG LC_CTYPE LC_NUMERIC LC_TIME LC_COLLATE LC_MONETARY LC_MESSAGES
    SendEnv LC_PAPER LC_NAME LC_ADDRESS LC_TELEPHONE LC_MEASUREMENT
    SendEnv LC_IDENTIFICATION LC_ALL LANGUAGE
    SendEnv XMODIFIERS
EOF

chmod 0644 "$SSH_CONFIG"
chown root:root "$SSH_CONFIG"
restorecon -F "$SSH_CONFIG" 2>/dev/null || true

# ssh -G fails on unknown options or bad MAC names: roll back if it does.
if ! ssh -G -F "$SSH_CONFIG" localhost >/dev/null 2>&1; then
  log "new ssh_config does not parse, restoring backup"
  cp -a -- "${SSH_CONFIG}.bak.${TS}" "$SSH_CONFIG"
  die "ssh -G rejected the generated config"
fi

got="$(current_macs)"
log "effective client MACs after change: ${got}"

IFS=',' read -r -a got_list <<< "$got"
for mac in "${got_list[@]}"; do
  case "$mac" in
    hmac-sha2-512|hmac-sha2-256|hmac-sha2-512-etm@openssh.com|hmac-sha2-256-etm@openssh.com) ;;
    *) die "unexpected MAC still offered: $mac" ;;
  esac
done

if grep -qsE '^\s*Include\b' "$SSH_CONFIG"; then
  die "Include directive still present in $SSH_CONFIG"
fi

log "OK: client offers only ${got}"
'''

# run-7, attempt 1: follows the tips literally (sub-policy module applied on
# DEFAULT, verified in the back-end, sshd restarted). The legacy drop-in
# included by ssh_config still wins, so the rule fails.
S_MACS_7_1 = r'''#!/usr/bin/env bash
# Rule: harden_sshd_macs_openssh_conf_crypto_policy
# Restrict OpenSSH MACs through a crypto-policies sub-policy module.
# /etc/ssh/ssh_config is left untouched: it belongs to openssh-clients and
# the crypto-policies back-end is the source of truth for SSH algorithms.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
MODULE_DIR=/etc/crypto-policies/policies/modules
MODULE_NAME=STIG-MACS
MODULE_FILE="${MODULE_DIR}/${MODULE_NAME}.pmod"
BACKEND=/etc/crypto-policies/back-ends/openssh.config
STATE_DIR=/var/lib/stig-remediation

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

backup() {
  local f="$1"
  [[ -e "$f" ]] || return 0
  cp -a -- "$f" "${f}.bak.${TS}"
  log "saved ${f}.bak.${TS}"
}

# Every MAC in a comma list must be SHA-2 based.
only_sha2_macs() {
  local list="$1" mac
  IFS=',' read -r -a macs <<< "$list"
  for mac in "${macs[@]}"; do
    case "$mac" in
      hmac-sha2-512|hmac-sha2-256|hmac-sha2-512-etm@openssh.com|hmac-sha2-256-etm@openssh.com) ;;
      *) log "not allowed: ${mac}"; return 1 ;;
    esac
  done
}

# Roll back the policy if anything below fails, so the host is not left
# half-configured for the next attempt.
rollback() {
  local rc=$?
  if (( rc != 0 )) && [[ -n "${current:-}" ]]; then
    log "failure (exit ${rc}); restoring crypto policy ${current}"
    update-crypto-policies --set "$current" || true
    if [[ -e "${MODULE_FILE}.bak.${TS}" ]]; then
      cp -a -- "${MODULE_FILE}.bak.${TS}" "$MODULE_FILE"
    fi
  fi
  exit "$rc"
}

command -v update-crypto-policies >/dev/null || die "crypto-policies-scripts not installed"

mkdir -p "$STATE_DIR"
current="$(update-crypto-policies --show)"
trap rollback EXIT
log "current crypto policy: ${current}"
echo "$current" > "${STATE_DIR}/crypto-policy.before.${TS}"

# 1. Sub-policy module: only SHA-2 MACs for SSH.
mkdir -p "$MODULE_DIR"
backup "$MODULE_FILE"
cat > "$MODULE_FILE" <<'EOF'
# STIG: OpenSSH may only use FIPS 140-validated MACs
mac@SSH = HMAC-SHA2-512 HMAC-SHA2-256
EOF
chmod 0644 "$MODULE_FILE"

# 2. Apply it on top of DEFAULT.
target="DEFAULT:${MODULE_NAME}"
log "applying crypto policy ${target}"
update-crypto-policies --set "$target"

# 3. Confirm the policy and what the OpenSSH back-end now contains.
shown="$(update-crypto-policies --show)"
[[ "$shown" == "$target" ]] || die "policy is '${shown}', expected '${target}'"

grep -i '^MACs' "$BACKEND" >&2 || die "no MACs line in ${BACKEND}"
backend_macs="$(awk 'tolower($1) == "macs" {print $2}' "$BACKEND")"
only_sha2_macs "$backend_macs" || die "back-end still allows non-SHA-2 MACs"
log "back-end MACs: ${backend_macs}"

# 4. New sessions must pick the policy up.
sshd -t || die "sshd -t failed; not restarting"
systemctl restart sshd
systemctl is-active --quiet sshd || die "sshd is not active after restart"

# ssh_config is deliberately not modified by this fix.
if [[ /etc/ssh/ssh_config -nt "$MODULE_FILE" ]]; then
  log "warning: /etc/ssh/ssh_config changed during this run"
fi
log "done: crypto policy ${shown}"
'''

# run-7, attempt 2: same approach on the FIPS base policy, re-applied.
S_MACS_7_2 = r'''#!/usr/bin/env bash
# Rule: harden_sshd_macs_openssh_conf_crypto_policy  (attempt 2)
# Attempt 1 applied DEFAULT:STIG-MACS and the check still failed. The STIG
# profile is built on FIPS, so apply FIPS:STIG-MACS and regenerate the
# back-ends from scratch. Still no MACs lines in ssh_config.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
MODULE_FILE=/etc/crypto-policies/policies/modules/STIG-MACS.pmod
BACKEND=/etc/crypto-policies/back-ends/openssh.config
SRV_BACKEND=/etc/crypto-policies/back-ends/opensshserver.config
TARGET="FIPS:STIG-MACS"

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

backup() {
  local f="$1"
  [[ -e "$f" ]] || return 0
  cp -a -- "$f" "${f}.bak.${TS}"
}

write_module() {
  mkdir -p "$(dirname "$MODULE_FILE")"
  backup "$MODULE_FILE"
  cat > "$MODULE_FILE" <<'EOF'
# STIG: OpenSSH client and server may only use SHA-2 MACs
mac@SSH = HMAC-SHA2-512 HMAC-SHA2-256
etm@SSH = ANY
EOF
  chmod 0644 "$MODULE_FILE"
}

apply_policy() {
  local policy="$1"
  log "update-crypto-policies --set ${policy}"
  update-crypto-policies --set "$policy"
  [[ "$(update-crypto-policies --show)" == "$policy" ]] \
    || die "policy not applied: $(update-crypto-policies --show)"
}

check_backend() {
  local file="$1" macs mac
  [[ -e "$file" ]] || die "missing back-end ${file}"
  macs="$(awk 'tolower($1) == "macs" {print $2}' "$file")"
  [[ -n "$macs" ]] || die "no MACs line in ${file}"
  IFS=',' read -r -a list <<< "$macs"
  for mac in "${list[@]}"; do
    case "$mac" in
      hmac-sha2-512|hmac-sha2-256|hmac-sha2-512-etm@openssh.com|hmac-sha2-256-etm@openssh.com) ;;
      *) die "${file} still allows ${mac}" ;;
    esac
  done
  log "${file}: MACs ${macs}"
}

restart_sshd() {
  sshd -t || die "sshd -t failed"
  systemctl restart sshd
  systemctl is-active --quiet sshd || die "sshd not active"
}

write_module
apply_policy "$TARGET"

# Stale back-ends are a known cause of this check failing: make sure both
# OpenSSH back-ends are symlinks produced by the policy we just set.
for f in "$BACKEND" "$SRV_BACKEND"; do
  if [[ ! -L "$f" ]]; then
    log "${f} is a regular file; re-applying policy to regenerate it"
    backup "$f"
    rm -f -- "$f"
    apply_policy "$TARGET"
  fi
  check_backend "$f"
done

restart_sshd

# The rule is about policy, not about hand-written client options.
if grep -qiE '^\s*MACs\b' /etc/ssh/ssh_config; then
  die "/etc/ssh/ssh_config carries a MACs line; it must come from the policy"
fi
log "crypto policy ${TARGET} active; ssh_config untouched"
'''

# run-7, attempt 3: re-applies again and even makes sure ssh_config still
# includes the drop-in directory - which is exactly what keeps it failing.
S_MACS_7_3 = r'''#!/usr/bin/env bash
# Rule: harden_sshd_macs_openssh_conf_crypto_policy  (attempt 3)
# Two policy changes did not satisfy the check. The back-end may simply be
# stale or not reach the client: re-apply the policy, make sure the client
# config still reaches the crypto-policies back-end through its Include
# chain, and restart sshd. No MACs lines are added to ssh_config.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
POLICY="FIPS:STIG-MACS"
MODULE_FILE=/etc/crypto-policies/policies/modules/STIG-MACS.pmod
BACKEND=/etc/crypto-policies/back-ends/openssh.config
SSH_CONFIG=/etc/ssh/ssh_config
REDHAT_DROPIN=/etc/ssh/ssh_config.d/50-redhat.conf

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

backup() {
  local f="$1"
  [[ -e "$f" ]] || return 0
  cp -a -- "$f" "${f}.bak.${TS}"
}

ensure_module() {
  if ! grep -qs '^mac@SSH = HMAC-SHA2-512 HMAC-SHA2-256$' "$MODULE_FILE"; then
    mkdir -p "$(dirname "$MODULE_FILE")"
    backup "$MODULE_FILE"
    printf '%s\n' '# STIG: SHA-2 MACs only for SSH' \
      'mac@SSH = HMAC-SHA2-512 HMAC-SHA2-256' > "$MODULE_FILE"
    chmod 0644 "$MODULE_FILE"
  fi
}

reapply_policy() {
  # --set with the same value regenerates every back-end
  update-crypto-policies --set "$POLICY"
  update-crypto-policies --show | grep -qx "$POLICY" || die "policy is not ${POLICY}"
}

# The client reads the policy through: ssh_config -> Include ssh_config.d/*.conf
# -> 50-redhat.conf -> Include /etc/crypto-policies/back-ends/openssh.config
ensure_include_chain() {
  if ! grep -qE '^\s*Include\s+/etc/ssh/ssh_config\.d/\*\.conf' "$SSH_CONFIG"; then
    log "restoring Include of ssh_config.d in ${SSH_CONFIG}"
    backup "$SSH_CONFIG"
    sed -i '1i Include /etc/ssh/ssh_config.d/*.conf' "$SSH_CONFIG"
  fi
  grep -qE "^\s*Include\s+${BACKEND}" "$REDHAT_DROPIN" \
    || die "${REDHAT_DROPIN} does not include the crypto-policies back-end"
}

ensure_module
reapply_policy
ensure_include_chain

macs="$(awk 'tolower($1) == "macs" {print $2}' "$BACKEND")"
log "back-end MACs: ${macs}"
case ",${macs}," in
  *,hmac-sha1,*|*,hmac-sha1-etm@openssh.com,*|*umac-*) die "back-end still lists weak MACs" ;;
esac

sshd -t || die "sshd -t failed"
systemctl restart sshd
systemctl is-active --quiet sshd || die "sshd not active"

srv_macs="$(awk 'tolower($1) == "macs" {print $2}' /etc/crypto-policies/back-ends/opensshserver.config 2>/dev/null || true)"
[[ -z "$srv_macs" ]] || log "server back-end MACs: ${srv_macs}"

# Record what was done, for the next attempt's context.
STATE="/var/lib/stig-remediation/macs-attempt3.${TS}.txt"
mkdir -p "$(dirname "$STATE")"
{
  echo "policy: $(update-crypto-policies --show)"
  echo "module: $(grep -v '^#' "$MODULE_FILE")"
  echo "client back-end MACs: ${macs}"
  echo "ssh_config Include lines:"
  grep -nE '^\s*Include' "$SSH_CONFIG" || true
  echo "ssh_config.d contents:"
  ls -1 /etc/ssh/ssh_config.d/ || true
} > "$STATE"
log "state written to ${STATE}"

log "policy $(update-crypto-policies --show) re-applied, sshd restarted"
log "client MACs as resolved by ssh -G (for the record):"
ssh -G localhost | awk '$1 == "macs"' >&2 || true
'''

# ---- configure_crypto_policy ----------------------------------------------

S_CP_6_1 = r'''#!/usr/bin/env bash
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
'''

S_CP_7_1 = r'''#!/usr/bin/env bash
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
'''

S_CP_7_2 = r'''#!/usr/bin/env bash
# Rule: configure_crypto_policy  (attempt 2)
# Attempt 1 also enabled kernel FIPS mode; that only takes effect after a
# reboot and left the host in a state the evaluator could not judge. This
# rule is about the system crypto policy, so set that persistently and
# verify it, and leave kernel FIPS mode to the reboot window.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
BACKENDS=/etc/crypto-policies/back-ends

mapfile -t overrides < <(find "$BACKENDS" -maxdepth 1 -type f -name '*.config')
if (( ${#overrides[@]} > 0 )); then
  tar -czf "/root/crypto-backends.${TS}.tar.gz" -C / "${BACKENDS#/}"
  rm -f -- "${overrides[@]}"
  echo "removed local back-end overrides: ${overrides[*]}"
fi

update-crypto-policies --set FIPS

# persistent state: the policy file and the back-end links
[[ "$(cat /etc/crypto-policies/config)" == FIPS ]]
[[ "$(update-crypto-policies --show)" == FIPS ]]
for f in "$BACKENDS"/*.config; do
  [[ -L "$f" ]] || { echo "$f is not a symlink" >&2; exit 1; }
  [[ "$(readlink -f "$f")" == /usr/share/crypto-policies/FIPS/* ]] \
    || { echo "$f does not point at the FIPS policy" >&2; exit 1; }
done
echo "crypto policy FIPS; fips-mode-setup not run (needs reboot)"
'''

# ---- sshd_disable_root_login ----------------------------------------------

S_ROOT_6_1 = r'''#!/usr/bin/env bash
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
'''

S_ROOT_7_1 = r'''#!/usr/bin/env bash
# Rule: sshd_disable_root_login
# Disable root login globally but keep key-only root access from the
# management bastion so automation keeps working.
set -euo pipefail

DROPIN=/etc/ssh/sshd_config.d/00-stig.conf
BASTION=10.20.0.5
TS="$(date -u +%Y%m%dT%H%M%SZ)"

install -d -m 0755 /etc/ssh/sshd_config.d
if [[ -f "$DROPIN" ]]; then
  cp -a "$DROPIN" "${DROPIN}.bak.${TS}"
fi

cat > "$DROPIN" <<EOF
# STIG sshd_disable_root_login (written ${TS})
PermitRootLogin no

# key-only root access from the management bastion
Match Address ${BASTION}
    PermitRootLogin prohibit-password
EOF
chmod 0600 "$DROPIN"

# restart so the scanner sees the new value; the unit checks the config
systemctl restart sshd
systemctl is-active sshd
grep -n 'PermitRootLogin' "$DROPIN"
'''

S_ROOT_7_2 = r'''#!/usr/bin/env bash
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
'''

# ---- sshd_set_max_auth_tries ------------------------------------------------

S_MAXAUTH_6_1 = r'''#!/usr/bin/env bash
# Rule: sshd_set_max_auth_tries  (MaxAuthTries <= 4)
set -euo pipefail

DROPIN=/etc/ssh/sshd_config.d/01-stig-maxauthtries.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"

# anything that sorts before us and sets MaxAuthTries would win
if grep -lsiE '^\s*MaxAuthTries' /etc/ssh/sshd_config.d/00-*.conf; then
  echo "an earlier drop-in already sets MaxAuthTries:" >&2
  grep -HsiE '^\s*MaxAuthTries' /etc/ssh/sshd_config.d/00-*.conf >&2
  exit 1
fi

if [[ -f "$DROPIN" ]]; then cp -a "$DROPIN" "$DROPIN.bak.$TS"; fi
printf '%s\n' "# STIG sshd_set_max_auth_tries" "MaxAuthTries 4" > "$DROPIN"
chmod 0600 "$DROPIN"

sshd -t
systemctl reload sshd

value="$(sshd -T | awk '$1 == "maxauthtries" {print $2}')"
echo "effective MaxAuthTries: $value"
(( value <= 4 ))
'''

S_MAXAUTH_7_1 = r'''#!/usr/bin/env bash
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
'''

# ---- sshd_set_idle_timeout ------------------------------------------------

S_IDLE_6_1 = r'''#!/usr/bin/env bash
# Rule: sshd_set_idle_timeout
set -euo pipefail

DROPIN=/etc/ssh/sshd_config.d/00-stig.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"

install -d -m 0755 "$(dirname "$DROPIN")"
touch "$DROPIN"; chmod 0600 "$DROPIN"
cp -a "$DROPIN" "$DROPIN.bak.$TS"

for kv in "ClientAliveInterval 600" "ClientAliveCountMax 1"; do
  key="${kv%% *}"
  if grep -qiE "^\s*${key}\b" "$DROPIN"; then
    sed -i -E "s/^\s*${key}\b.*/${kv}/I" "$DROPIN"
  else
    echo "$kv" >> "$DROPIN"
  fi
done

# other drop-ins (cloud-init writes 50-cloud-init.conf) must not set these first
grep -HiE '^\s*ClientAlive' /etc/ssh/sshd_config.d/*.conf /etc/ssh/sshd_config || true

sshd -t
systemctl reload sshd

sshd -T | grep -iE '^clientalive(interval|countmax) ' | sort \
  | diff - <(printf 'clientalivecountmax 1\nclientaliveinterval 600\n')
echo "idle timeout: 600 s, 1 probe"
'''

S_IDLE_7_1 = r'''#!/usr/bin/env bash
# Rule: sshd_set_idle_timeout
# Idle sessions are dropped after 600 s without client response.
set -euo pipefail

DROPIN=/etc/ssh/sshd_config.d/00-stig.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"

set_opt() {
  local key="$1" value="$2"
  if grep -qiE "^\s*${key}\b" "$DROPIN"; then
    sed -i -E "s/^\s*${key}\b.*/${key} ${value}/I" "$DROPIN"
  else
    printf '%s %s\n' "$key" "$value" >> "$DROPIN"
  fi
}

install -d -m 0755 /etc/ssh/sshd_config.d
touch "$DROPIN"; chmod 0600 "$DROPIN"
cp -a "$DROPIN" "${DROPIN}.bak.${TS}"

set_opt ClientAliveInterval 600
# CountMax 0: cut the session exactly at the interval, no extra probes
set_opt ClientAliveCountMax 0

sshd -t
systemctl reload sshd

# effective values (an earlier drop-in would win)
interval="$(sshd -T | awk '$1 == "clientaliveinterval" {print $2}')"
countmax="$(sshd -T | awk '$1 == "clientalivecountmax" {print $2}')"
echo "ClientAliveInterval=${interval} ClientAliveCountMax=${countmax}"
[[ "$interval" == 600 && "$countmax" == 0 ]]
'''

S_IDLE_7_2 = r'''#!/usr/bin/env bash
# Rule: sshd_set_idle_timeout  (attempt 2)
# The evaluator rejected ClientAliveCountMax 0: the current STIG wants 1.
set -euo pipefail

DROPIN=/etc/ssh/sshd_config.d/00-stig.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"

set_opt() {
  local key="$1" value="$2"
  if grep -qiE "^\s*${key}\b" "$DROPIN"; then
    sed -i -E "s/^\s*${key}\b.*/${key} ${value}/I" "$DROPIN"
  else
    printf '%s %s\n' "$key" "$value" >> "$DROPIN"
  fi
}

install -d -m 0755 /etc/ssh/sshd_config.d
touch "$DROPIN"; chmod 0600 "$DROPIN"
cp -a "$DROPIN" "${DROPIN}.bak.${TS}"

set_opt ClientAliveInterval 600
set_opt ClientAliveCountMax 1

sshd -t
systemctl reload sshd

interval="$(sshd -T | awk '$1 == "clientaliveinterval" {print $2}')"
countmax="$(sshd -T | awk '$1 == "clientalivecountmax" {print $2}')"
echo "ClientAliveInterval=${interval} ClientAliveCountMax=${countmax}"
[[ "$interval" == 600 && "$countmax" == 1 ]]
'''

# ---- sshd_disable_x11_forwarding --------------------------------------------

S_X11_6_1 = r'''#!/usr/bin/env bash
# Rule: sshd_disable_x11_forwarding
set -euo pipefail

CFG=/etc/ssh/sshd_config
cp -a "$CFG" "$CFG.bak.$(date -u +%Y%m%dT%H%M%SZ)"

# RHEL ships an active 'X11Forwarding yes' in the main file: change it there
if grep -qE '^\s*X11Forwarding\b' "$CFG"; then
  sed -i -E 's/^\s*X11Forwarding\b.*/X11Forwarding no/' "$CFG"
else
  echo 'X11Forwarding no' >> "$CFG"
fi

# a drop-in would win over the main file; stop if one still enables it
if grep -HiE '^\s*X11Forwarding\s+yes' /etc/ssh/sshd_config.d/*.conf 2>/dev/null; then
  echo "a drop-in still enables X11Forwarding" >&2
  exit 1
fi

sshd -t
systemctl reload sshd
[[ "$(sshd -T | awk '$1=="x11forwarding"{print $2}')" == no ]]
echo "X11Forwarding no"
'''

S_X11_7_1 = r'''#!/usr/bin/env bash
# Rule: sshd_disable_x11_forwarding
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
CFG=/etc/ssh/sshd_config
DROPIN=/etc/ssh/sshd_config.d/00-stig.conf

cp -a "$CFG" "${CFG}.bak.${TS}"
# 1. the shipped 'X11Forwarding yes' in the main file, changed in place
sed -i -E 's/^\s*X11Forwarding\s+yes\b.*/X11Forwarding no/' "$CFG"

# 2. same value in the early drop-in so an sshd_config.rpmnew can't undo it
install -d -m 0755 "$(dirname "$DROPIN")"
touch "$DROPIN"; chmod 0600 "$DROPIN"
if grep -qiE '^\s*X11Forwarding\b' "$DROPIN"; then
  sed -i -E 's/^\s*X11Forwarding\b.*/X11Forwarding no/I' "$DROPIN"
else
  echo 'X11Forwarding no' >> "$DROPIN"
fi

# 3. headless server: without xauth, forwarding cannot work at all
if rpm -q xorg-x11-xauth >/dev/null 2>&1; then
  dnf -y remove xorg-x11-xauth
fi

sshd -t
systemctl reload sshd
[[ "$(sshd -T | awk '$1=="x11forwarding"{print $2}')" == no ]]
if rpm -q xorg-x11-xauth >/dev/null 2>&1; then
  echo "xorg-x11-xauth still installed" >&2; exit 1
fi
echo "X11 forwarding disabled; xauth removed"
'''

# ---- accounts_passwords_pam_faillock_deny -----------------------------------

S_FAILLOCK_6_1 = r'''#!/usr/bin/env bash
# Rule: accounts_passwords_pam_faillock_deny
# Lock an account after 3 consecutive failed logons (deny = 3).
# The host is authselect-managed: PAM stacks are generated, so faillock is
# switched on with the with-faillock feature and tuned in faillock.conf.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
FAILLOCK_CONF=/etc/security/faillock.conf
PAM_FILES=(/etc/pam.d/system-auth /etc/pam.d/password-auth)

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

backup() {
  local f
  for f in "$@"; do
    [[ -e "$f" ]] || continue
    cp -a -- "$(readlink -f "$f")" "$(readlink -f "$f").bak.${TS}"
    log "backup $(readlink -f "$f").bak.${TS}"
  done
}

# Set "key = value" in faillock.conf; replaces a commented default too.
set_faillock_opt() {
  local key="$1" value="$2"
  if grep -qE "^\s*${key}\s*=" "$FAILLOCK_CONF"; then
    sed -i -E "s|^\s*${key}\s*=.*|${key} = ${value}|" "$FAILLOCK_CONF"
  elif grep -qE "^\s*#\s*${key}\s*=" "$FAILLOCK_CONF"; then
    sed -i -E "0,/^\s*#\s*${key}\s*=.*/s||${key} = ${value}|" "$FAILLOCK_CONF"
  else
    printf '%s = %s\n' "$key" "$value" >> "$FAILLOCK_CONF"
  fi
}

# Flag-style options without a value, such as 'audit'.
set_faillock_flag() {
  local flag="$1"
  if grep -qE "^\s*${flag}\s*$" "$FAILLOCK_CONF"; then
    return 0
  elif grep -qE "^\s*#\s*${flag}\s*$" "$FAILLOCK_CONF"; then
    sed -i -E "s|^\s*#\s*${flag}\s*$|${flag}|" "$FAILLOCK_CONF"
  else
    echo "$flag" >> "$FAILLOCK_CONF"
  fi
}

command -v authselect >/dev/null || die "authselect not installed"

profile="$(authselect current --raw | awk '{print $1}')"
[[ -n "$profile" ]] || die "no authselect profile selected"
log "authselect profile: $(authselect current --raw)"

backup "$FAILLOCK_CONF" "${PAM_FILES[@]}"

# 1. PAM: let authselect generate the pam_faillock lines.
if authselect current --raw | grep -qw with-faillock; then
  log "with-faillock already enabled"
else
  authselect enable-feature with-faillock
fi
authselect apply-changes

# 2. Policy values live in faillock.conf (read by every pam_faillock call).
[[ -f "$FAILLOCK_CONF" ]] || die "$FAILLOCK_CONF missing (pam package broken?)"
set_faillock_opt deny 3
set_faillock_opt fail_interval 900
set_faillock_opt unlock_time 0
set_faillock_flag audit

# 3. Verify: PAM stacks carry preauth/authfail, no deny= argument that
#    would override faillock.conf, and the conf holds deny = 3.
for f in "${PAM_FILES[@]}"; do
  grep -qE '^auth\s+required\s+pam_faillock\.so\s+preauth' "$f" \
    || die "$f: no pam_faillock preauth line"
  grep -qE '^auth\s+(required|\[default=die\])\s+pam_faillock\.so\s+authfail' "$f" \
    || die "$f: no pam_faillock authfail line"
  if grep -qE 'pam_faillock\.so.*\bdeny=' "$f"; then
    die "$f: deny= set on a PAM line; it would override faillock.conf"
  fi
done

deny="$(awk -F= '/^\s*deny\s*=/{gsub(/ /,"",$2); print $2}' "$FAILLOCK_CONF")"
[[ "$deny" == 3 ]] || die "faillock.conf deny is '$deny'"

authselect check || die "authselect check failed after changes"
log "faillock: deny=3 fail_interval=900 unlock_time=0 (profile ${profile})"
'''

S_FAILLOCK_7_1 = r'''#!/usr/bin/env bash
# Rule: accounts_passwords_pam_faillock_deny
# Count every failed logon: pam_faillock goes first in the auth stack.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
LINE='auth        required      pam_faillock.so authfail deny=3 unlock_time=0'

for f in /etc/pam.d/system-auth /etc/pam.d/password-auth; do
  real="$(readlink -f "$f")"          # authselect links these into /etc/authselect
  cp -a -- "$real" "${real}.bak.${TS}"
  if grep -qE '^auth\s+required\s+pam_faillock\.so\s+authfail' "$real"; then
    echo "$real: faillock authfail line already present"
    continue
  fi
  # insert before the first auth line
  sed -i "0,/^auth\b/s//${LINE}\nauth/" "$real"
  echo "--- $real"
  grep -n '^auth' "$real"
done

grep -c 'pam_faillock.so authfail deny=3' /etc/pam.d/system-auth /etc/pam.d/password-auth
'''

S_FAILLOCK_7_2 = r'''#!/usr/bin/env bash
# Rule: accounts_passwords_pam_faillock_deny  (attempt 2)
# Attempt 1 put an authfail line at the top of the auth stack by hand and
# every logon (root on the console included) was counted as a failure.
# This time: PAM stays under authselect's control, deny lives in
# faillock.conf.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
FAILLOCK_CONF=/etc/security/faillock.conf
PAM_FILES=(/etc/pam.d/system-auth /etc/pam.d/password-auth)

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

backup() {
  local f real
  for f in "$@"; do
    [[ -e "$f" ]] || continue
    real="$(readlink -f "$f")"
    cp -a -- "$real" "${real}.bak.${TS}"
  done
}

set_conf() {
  local key="$1" value="$2"
  if grep -qE "^\s*${key}\s*=" "$FAILLOCK_CONF"; then
    sed -i -E "s|^\s*${key}\s*=.*|${key} = ${value}|" "$FAILLOCK_CONF"
  else
    printf '%s = %s\n' "$key" "$value" >> "$FAILLOCK_CONF"
  fi
}

command -v authselect >/dev/null || die "authselect not installed"
backup "$FAILLOCK_CONF" "${PAM_FILES[@]}"

current="$(authselect current --raw)"
profile="${current%% *}"
features="${current#"$profile"}"
log "authselect: profile=${profile} features=${features:-none}"

# 0. Make sure authselect still owns the PAM files. If someone edited them
#    by hand, re-select the same profile with the same features first.
if ! authselect check; then
  log "PAM files were modified outside authselect; re-selecting ${profile}"
  # shellcheck disable=SC2086
  authselect select "$profile" $features --force
  authselect check || die "authselect check still failing after re-select"
fi

# 1. faillock in the generated stacks
if [[ " ${features} " != *" with-faillock "* ]]; then
  authselect enable-feature with-faillock
fi
authselect apply-changes

# 2. policy in faillock.conf
[[ -f "$FAILLOCK_CONF" ]] || die "missing $FAILLOCK_CONF"
set_conf deny 3
set_conf fail_interval 900
set_conf unlock_time 0

# 3. verify the generated stacks and the configuration
for f in "${PAM_FILES[@]}"; do
  first_auth="$(grep -m1 -E '^auth\s' "$f")"
  [[ "$first_auth" == *"pam_env.so"* || "$first_auth" == *"pam_faillock.so preauth"* ]] \
    || die "$f: unexpected first auth line: ${first_auth}"
  grep -qE '^auth\s+required\s+pam_faillock\.so\s+preauth' "$f" || die "$f: no preauth line"
  grep -qE '^auth\s+\[default=die\]\s+pam_faillock\.so\s+authfail' "$f" || die "$f: no authfail line"
  grep -qE '^account\s+required\s+pam_faillock\.so' "$f" || die "$f: no account line"
  if grep -qE 'pam_faillock\.so.*\bdeny=' "$f"; then
    die "$f: deny= on a PAM line would override faillock.conf"
  fi
done

grep -qE '^\s*deny\s*=\s*3\s*$' "$FAILLOCK_CONF" || die "deny is not 3"
authselect check

# 4. show the result for the log
authselect current >&2
grep -E '^\s*(deny|fail_interval|unlock_time)\s*=' "$FAILLOCK_CONF" >&2
for f in "${PAM_FILES[@]}"; do
  log "$f: $(grep -c pam_faillock "$f") pam_faillock lines"
done
log "faillock deny=3 via authselect with-faillock + faillock.conf"
'''

# ---- accounts_passwords_pam_faillock_deny_root ----------------------------

S_DENYROOT_6_1 = r'''#!/usr/bin/env bash
# Rule: accounts_passwords_pam_faillock_deny_root
set -euo pipefail

CONF=/etc/security/faillock.conf
cp -a "$CONF" "$CONF.bak.$(date -u +%Y%m%dT%H%M%SZ)"

# even_deny_root belongs in faillock.conf, not on the pam_faillock lines
if grep -qE '^\s*even_deny_root\s*$' "$CONF"; then
  :
elif grep -qE '^\s*#\s*even_deny_root\s*$' "$CONF"; then
  sed -i -E 's/^\s*#\s*even_deny_root\s*$/even_deny_root/' "$CONF"
else
  echo 'even_deny_root' >> "$CONF"
fi

# pam_faillock must actually be in the stack for the flag to matter
if ! authselect current --raw | grep -qw with-faillock; then
  authselect enable-feature with-faillock
  authselect apply-changes
fi

# Scanner probes leave failures in root's tally; with even_deny_root and
# unlock_time = 0 those would lock root out right away.
faillock --user root --reset

grep -nE '^\s*even_deny_root' "$CONF"
authselect current --raw | grep -w with-faillock
if [[ -n "$(faillock --user root | awk 'NR>2')" ]]; then
  echo "root tally not empty" >&2; exit 1
fi
echo "even_deny_root set; root tally clean"
'''

S_DENYROOT_7_1 = r'''#!/usr/bin/env bash
# Rule: accounts_passwords_pam_faillock_deny_root
set -euo pipefail

CONF=/etc/security/faillock.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"
cp -a "$CONF" "${CONF}.bak.${TS}"

grep -qE '^\s*even_deny_root\s*$' "$CONF" || echo 'even_deny_root' >> "$CONF"

if ! authselect current --raw | grep -qw with-faillock; then
  authselect enable-feature with-faillock
  authselect apply-changes
fi

# Prove the lockout applies to root: three bad passwords, then the tally.
rpm -q pamtester >/dev/null 2>&1 || dnf -y -q install pamtester
for i in 1 2 3; do
  printf 'wrong-password-%s\n' "$i" | pamtester login root authenticate || true
done

faillock --user root
failures="$(faillock --user root | awk 'NR>2 && $NF=="V"' | wc -l)"
if (( failures >= 3 )); then
  echo "root is locked after ${failures} failures, as required"
else
  echo "root lockout not observed (${failures} failures)" >&2
  exit 1
fi
'''

S_DENYROOT_7_2 = r'''#!/usr/bin/env bash
# Rule: accounts_passwords_pam_faillock_deny_root  (attempt 2)
# Do not trigger failures on purpose: with unlock_time = 0 a test lockout
# of root is permanent (attempt 1 locked the console). Configure, then make
# sure root's tally is empty.
set -euo pipefail

CONF=/etc/security/faillock.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"
cp -a "$CONF" "${CONF}.bak.${TS}"

if ! grep -qE '^\s*even_deny_root\s*$' "$CONF"; then
  if grep -qE '^\s*#\s*even_deny_root\s*$' "$CONF"; then
    sed -i -E 's/^\s*#\s*even_deny_root\s*$/even_deny_root/' "$CONF"
  else
    echo 'even_deny_root' >> "$CONF"
  fi
fi

if ! authselect current --raw | grep -qw with-faillock; then
  authselect enable-feature with-faillock
  authselect apply-changes
fi

faillock --user root --reset

# verify: flag in the conf, feature active, no recorded failures for root
grep -qE '^\s*even_deny_root\s*$' "$CONF"
authselect current --raw | grep -qw with-faillock
if faillock --user root | awk 'NR>2' | grep -q .; then
  echo "root still has recorded failures" >&2; exit 1
fi
echo "even_deny_root active, root tally empty"
'''

# ---- accounts_password_pam_minlen -----------------------------------------

S_MINLEN_6_1 = r'''#!/usr/bin/env bash
# Rule: accounts_password_pam_minlen  (minlen >= 15)
set -euo pipefail

CONF=/etc/security/pwquality.conf
cp -a "$CONF" "$CONF.bak.$(date -u +%Y%m%dT%H%M%SZ)"

if grep -qE '^\s*minlen\s*=' "$CONF"; then
  sed -i -E 's/^\s*minlen\s*=.*/minlen = 15/' "$CONF"
elif grep -qE '^\s*#\s*minlen\s*=' "$CONF"; then
  sed -i -E '0,/^\s*#\s*minlen\s*=.*/s//minlen = 15/' "$CONF"
else
  echo 'minlen = 15' >> "$CONF"
fi

# files in pwquality.conf.d are read after the main file; none may lower it
if compgen -G '/etc/security/pwquality.conf.d/*.conf' >/dev/null; then
  if grep -HE '^\s*minlen\s*=\s*([0-9]|1[0-4])\s*$' /etc/security/pwquality.conf.d/*.conf; then
    echo "a pwquality drop-in sets a lower minlen" >&2
    exit 1
  fi
fi
grep -E '^\s*minlen\s*=' "$CONF"
'''

S_MINLEN_7_1 = r'''#!/usr/bin/env bash
# Rule: accounts_password_pam_minlen
# minlen as a pam_pwquality argument takes precedence over pwquality.conf.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"

for f in /etc/pam.d/system-auth /etc/pam.d/password-auth; do
  real="$(readlink -f "$f")"
  cp -a -- "$real" "${real}.bak.${TS}"
  if grep -qE '^password\s+requisite\s+pam_pwquality\.so.*\bminlen=' "$real"; then
    sed -i -E '/^password\s+requisite\s+pam_pwquality\.so/ s/\bminlen=[0-9]+/minlen=15/' "$real"
  else
    sed -i -E '/^password\s+requisite\s+pam_pwquality\.so/ s/$/ minlen=15/' "$real"
  fi
  grep -nE 'pam_pwquality\.so' "$real"
done
'''

S_MINLEN_7_2 = r'''#!/usr/bin/env bash
# Rule: accounts_password_pam_minlen  (attempt 2)
# The check reads pwquality.conf and pwquality.conf.d, not PAM arguments.
set -euo pipefail

DIR=/etc/security/pwquality.conf.d
FILE="$DIR/50-stig-minlen.conf"

install -d -m 0755 "$DIR"
cat > "$FILE" <<'EOF'
# STIG accounts_password_pam_minlen
minlen = 15
EOF
chmod 0644 "$FILE"

# the main file must not carry a conflicting minlen
if grep -qE '^\s*minlen\s*=' /etc/security/pwquality.conf; then
  cp -a /etc/security/pwquality.conf "/etc/security/pwquality.conf.bak.$(date -u +%Y%m%dT%H%M%SZ)"
  sed -i -E 's/^\s*minlen\s*=.*/# & (set in pwquality.conf.d)/' /etc/security/pwquality.conf
fi
grep -H minlen "$FILE"
'''

# ---- accounts_password_pam_ucredit ------------------------------------------

S_UCREDIT_6_1 = r'''#!/usr/bin/env bash
# Rule: accounts_password_pam_ucredit  (at least one upper-case character)
set -euo pipefail

CONF=/etc/security/pwquality.conf
cp -a "$CONF" "$CONF.bak.$(date -u +%Y%m%dT%H%M%SZ)"

# negative credit = minimum number of characters of that class
if grep -qE '^\s*#?\s*ucredit\s*=' "$CONF"; then
  sed -i -E 's/^\s*#?\s*ucredit\s*=.*/ucredit = -1/' "$CONF"
else
  echo 'ucredit = -1' >> "$CONF"
fi

grep -E '^\s*ucredit\s*=\s*-1\s*$' "$CONF"
'''

S_UCREDIT_7_1 = r'''#!/usr/bin/env bash
# Rule: accounts_password_pam_ucredit
# The four credit rules are set together in one drop-in; negative values
# mean "at least one character of this class".
set -euo pipefail

DIR=/etc/security/pwquality.conf.d
FILE="$DIR/50-stig-credit.conf"

install -d -m 0755 "$DIR"
if [[ -f "$FILE" ]]; then cp -a "$FILE" "$FILE.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi

cat > "$FILE" <<'EOF'
# STIG password complexity (credit rules)
ucredit = -1
lcredit = -1
dcredit = -1
ocredit = -1
EOF
chmod 0644 "$FILE"

# a positive value left in pwquality.conf is worth knowing about
for key in ucredit lcredit dcredit ocredit; do
  if grep -qE "^\s*${key}\s*=\s*[0-9]" /etc/security/pwquality.conf; then
    echo "warning: pwquality.conf sets a positive ${key}" >&2
  fi
done
grep -H credit "$FILE"
'''

# ---- auditd_data_retention_space_left_action --------------------------------

S_SPACE_6_1 = r'''#!/usr/bin/env bash
# Rule: auditd_data_retention_space_left_action
set -euo pipefail

CONF=/etc/audit/auditd.conf
cp -a "$CONF" "$CONF.bak.$(date -u +%Y%m%dT%H%M%SZ)"

set_conf() {
  local key="$1" value="$2"
  if grep -qE "^\s*${key}\s*=" "$CONF"; then
    sed -i -E "s|^\s*${key}\s*=.*|${key} = ${value}|" "$CONF"
  else
    echo "${key} = ${value}" >> "$CONF"
  fi
}

set_conf space_left_action email
set_conf action_mail_acct root

# systemctl refuses to restart auditd (RefuseManualStop=yes)
service auditd restart
sleep 2
auditctl -s | grep '^enabled'
grep -E '^(space_left_action|action_mail_acct)\s*=' "$CONF"
'''

S_SPACE_7_1 = r'''#!/usr/bin/env bash
# Rule: auditd_data_retention_space_left_action
set -euo pipefail

CONF=/etc/audit/auditd.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"
cp -a "$CONF" "${CONF}.bak.${TS}"

set_conf() {
  local key="$1" value="$2"
  if grep -qE "^\s*${key}\s*=" "$CONF"; then
    sed -i -E "s|^\s*${key}\s*=.*|${key} = ${value}|" "$CONF"
  else
    echo "${key} = ${value}" >> "$CONF"
  fi
}

# warn the admin by mail when free space drops below a quarter of the volume
set_conf space_left 25%
set_conf space_left_action email
set_conf action_mail_acct root

# auditd refuses 'systemctl restart'; the service wrapper works
service auditd restart
sleep 2
auditctl -s | grep '^enabled'
grep -E '^(space_left|space_left_action|action_mail_acct)\s*=' "$CONF"
'''

# ---- audit_rules_immutable --------------------------------------------------

S_IMMUT_6_1 = r'''#!/usr/bin/env bash
# Rule: audit_rules_immutable
set -euo pipefail

RULES=/etc/audit/rules.d/99-finalize.rules

if [[ -f "$RULES" ]]; then cp -a "$RULES" "$RULES.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi
printf '%s\n' '## make the audit configuration immutable; reboot to change rules' '-e 2' > "$RULES"
chmod 0600 "$RULES"

# load now so the running kernel reports enabled 2 as well
augenrules --load
auditctl -s | grep '^enabled'
tail -n 1 /etc/audit/audit.rules | grep -qx -- '-e 2'
echo "-e 2 is the last rule and loaded"
'''

S_IMMUT_6_2 = r'''#!/usr/bin/env bash
# Rule: audit_rules_immutable  (attempt 2)
# -e 2 is written for the next boot only: loading it now made the running
# audit config immutable and the evaluator could not load anything.
set -euo pipefail

RULES=/etc/audit/rules.d/99-finalize.rules

if [[ -f "$RULES" ]]; then cp -a "$RULES" "$RULES.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi
printf '%s\n' '## make the audit configuration immutable; reboot to change rules' '-e 2' > "$RULES"
chmod 0600 "$RULES"

# must sort last among the rules.d files
last="$(ls -1 /etc/audit/rules.d/*.rules | sort | tail -n 1)"
[[ "$last" == "$RULES" ]] || { echo "$last sorts after $RULES" >&2; exit 1; }

# regenerate audit.rules without loading it
augenrules
tail -n 1 /etc/audit/audit.rules | grep -qx -- '-e 2'
echo "immutable flag written; takes effect at next boot"
'''

S_IMMUT_7_1 = r'''#!/usr/bin/env bash
# Rule: audit_rules_immutable
# The scanner reads the running kernel state: make audit immutable now.
set -euo pipefail

auditctl -s
auditctl -e 2

state="$(auditctl -s | awk '$1=="enabled"{print $2}')"
[[ "$state" == 2 ]] || { echo "audit enabled=$state, expected 2" >&2; exit 1; }
echo "audit configuration is immutable until reboot"
'''

S_IMMUT_7_2 = r'''#!/usr/bin/env bash
# Rule: audit_rules_immutable  (attempt 2)
# auditctl -e 2 alone was not persistent. Write the rules file so it
# survives a reboot and load it so the running kernel matches.
set -euo pipefail

RULES=/etc/audit/rules.d/99-finalize.rules
TS="$(date -u +%Y%m%dT%H%M%SZ)"

if [[ -f "$RULES" ]]; then cp -a "$RULES" "${RULES}.bak.${TS}"; fi
printf '%s\n' '## immutable audit configuration' '-e 2' > "$RULES"
chmod 0600 "$RULES"

augenrules --load

# effective state, not just the file
state="$(auditctl -s | awk '$1=="enabled"{print $2}')"
[[ "$state" == 2 ]] || { echo "running audit enabled=$state" >&2; exit 1; }
tail -n 1 /etc/audit/audit.rules | grep -qx -- '-e 2'
echo "audit immutable (file + running kernel)"
'''

S_IMMUT_7_3 = r'''#!/usr/bin/env bash
# Rule: audit_rules_immutable  (attempt 3)
# Loading -e 2 locks the running audit config, which the evaluator cannot
# work with. Immutability is a boot-time setting: write the rules file,
# regenerate audit.rules, and do not load it.
set -euo pipefail

RULES=/etc/audit/rules.d/99-finalize.rules
TS="$(date -u +%Y%m%dT%H%M%SZ)"

if [[ -f "$RULES" ]]; then cp -a "$RULES" "${RULES}.bak.${TS}"; fi
printf '%s\n' '## immutable audit configuration (active from next boot)' '-e 2' > "$RULES"
chmod 0600 "$RULES"

last="$(find /etc/audit/rules.d -maxdepth 1 -name '*.rules' | sort | tail -n 1)"
[[ "$last" == "$RULES" ]] || { echo "$last sorts after $RULES" >&2; exit 1; }

augenrules
tail -n 1 /etc/audit/audit.rules | grep -qx -- '-e 2'
echo "-e 2 is the final rule in audit.rules; not loaded (reboot applies it)"
'''

# ---- audit_rules_privileged_commands_sudo -----------------------------------

S_PRIV_6_1 = r'''#!/usr/bin/env bash
# Rule: audit_rules_privileged_commands_sudo
set -euo pipefail

RULES=/etc/audit/rules.d/50-privileged-sudo.rules
LINE='-a always,exit -F path=/usr/bin/sudo -F perm=x -F auid>=1000 -F auid!=unset -k privileged'

if [[ -f "$RULES" ]] && grep -qxF -- "$LINE" "$RULES"; then
  echo "rule already present"
else
  install -m 0600 /dev/null "$RULES.tmp"
  echo "$LINE" > "$RULES.tmp"
  mv -f "$RULES.tmp" "$RULES"
fi

augenrules --load
auditctl -l | grep -F -- '-F path=/usr/bin/sudo '
'''

S_PRIV_7_1 = r'''#!/usr/bin/env bash
# Rule: audit_rules_privileged_commands_sudo
# Generate privileged-command audit rules for every setuid/setgid binary on
# local filesystems. This covers sudo and the sibling per-command rules
# (su, passwd, chage, mount, ...) in one file.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
RULES_DIR=/etc/audit/rules.d
OUT="${RULES_DIR}/50-privileged.rules"
TMP="$(mktemp)"
trap 'rm -f "$TMP" "$TMP.body" "$TMP.final"' EXIT

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# Local, non-pseudo filesystems only; network mounts are skipped on purpose.
local_mounts() {
  findmnt -rn -o TARGET,FSTYPE \
    | awk '$2 !~ /^(proc|sysfs|tmpfs|devtmpfs|devpts|cgroup2?|securityfs|pstore|bpf|autofs|mqueue|hugetlbfs|debugfs|tracefs|configfs|fusectl|nfs4?|cifs|fuse\..*)$/ {print $1}'
}

rule_for() {
  printf -- '-a always,exit -F path=%s -F perm=x -F auid>=1000 -F auid!=unset -k privileged\n' "$1"
}

# 1. Collect binaries.
count=0
: > "$TMP.body"
while IFS= read -r mnt; do
  while IFS= read -r -d '' bin; do
    rule_for "$bin" >> "$TMP.body"
    count=$((count + 1))
  done < <(find "$mnt" -xdev -type f -perm /6000 -print0 2>/dev/null | sort -z)
done < <(local_mounts)

(( count > 0 )) || die "no setuid/setgid binaries found (find failed?)"
grep -qF -- '-F path=/usr/bin/sudo ' "$TMP.body" || die "sudo not among the generated rules"

# 2. Bind mounts show the same binary twice; augenrules rejects duplicates.
sort -u "$TMP.body" -o "$TMP.body"
count="$(wc -l < "$TMP.body")"

{
  echo "## privileged commands (setuid/setgid), generated ${TS}"
  echo "## re-run the generator after installing packages that ship setuid binaries"
  cat "$TMP.body"
} > "$TMP.final"

# 3. Install, keeping the previous file.
if [[ -f "$OUT" ]]; then
  cp -a -- "$OUT" "${OUT}.bak.${TS}"
  if cmp -s "$TMP.final" "$OUT"; then
    log "rules unchanged"
  fi
fi
install -m 0600 "$TMP.final" "$OUT"
log "wrote ${count} rules to ${OUT}"

# 4. An older hand-written sudo rule elsewhere would now be a duplicate.
for f in "$RULES_DIR"/*.rules; do
  [[ "$f" == "$OUT" ]] && continue
  if grep -qF -- '-F path=/usr/bin/sudo ' "$f"; then
    log "removing duplicate sudo rule from $f"
    cp -a -- "$f" "${f}.bak.${TS}"
    sed -i '\|-F path=/usr/bin/sudo |d' "$f"
  fi
done

# 5. Load and verify in the running kernel.
augenrules --load

loaded="$(auditctl -l | grep -c -- 'key=privileged$' || true)"
log "loaded privileged rules: ${loaded} (generated ${count})"
auditctl -l | grep -F -- '-F path=/usr/bin/sudo ' >/dev/null || die "sudo rule not loaded"
(( loaded >= count )) || die "only ${loaded}/${count} privileged rules loaded"

# 6. Spot-check a few well-known binaries.
for bin in /usr/bin/sudo /usr/bin/su /usr/bin/passwd /usr/bin/chage; do
  [[ -e "$bin" ]] || continue
  auditctl -l | grep -qF -- "-F path=${bin} " || die "no loaded rule for ${bin}"
done
log "privileged-command auditing active for ${count} binaries"
'''

# ---- audit_rules_time_adjtimex ------------------------------------------------

S_TIME_6_1 = r'''#!/usr/bin/env bash
# Rule: audit_rules_time_adjtimex
set -euo pipefail

RULES=/etc/audit/rules.d/30-time-change.rules

# x86_64 host: the 64-bit syscall table is the one in use
[[ "$(uname -m)" == x86_64 ]] || { echo "unexpected arch $(uname -m)" >&2; exit 1; }

if [[ -f "$RULES" ]]; then cp -a "$RULES" "$RULES.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi
echo '-a always,exit -F arch=b64 -S adjtimex -k audit_time_rules' > "$RULES"
chmod 0600 "$RULES"

augenrules --load
auditctl -l | grep -- '-S adjtimex'
'''

S_TIME_6_2 = r'''#!/usr/bin/env bash
# Rule: audit_rules_time_adjtimex  (attempt 2)
# 32-bit binaries can still call adjtimex through the b32 table; the check
# wants a rule for each architecture.
set -euo pipefail

RULES=/etc/audit/rules.d/30-time-change.rules

if [[ -f "$RULES" ]]; then cp -a "$RULES" "$RULES.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi
cat > "$RULES" <<'EOF'
## adjtimex, both syscall tables
-a always,exit -F arch=b32 -S adjtimex -k audit_time_rules
-a always,exit -F arch=b64 -S adjtimex -k audit_time_rules
EOF
chmod 0600 "$RULES"

augenrules --load
n="$(auditctl -l | grep -c -- '-S adjtimex')"
[[ "$n" -ge 2 ]] || { echo "expected 2 adjtimex rules, found $n" >&2; exit 1; }
auditctl -l | grep -- '-S adjtimex'
'''

S_TIME_7_1 = r'''#!/usr/bin/env bash
# Rule: audit_rules_time_adjtimex
# Time changes for both syscall tables; adjtimex, settimeofday and
# clock_settime share one rule per architecture.
set -euo pipefail

RULES=/etc/audit/rules.d/30-time-change.rules

if [[ -f "$RULES" ]]; then cp -a "$RULES" "$RULES.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi
cat > "$RULES" <<'EOF'
## time changes, both syscall tables
-a always,exit -F arch=b32 -S adjtimex -S settimeofday -S clock_settime -k audit_time_rules
-a always,exit -F arch=b64 -S adjtimex -S settimeofday -S clock_settime -k audit_time_rules
EOF
chmod 0600 "$RULES"

augenrules --load
for arch in b32 b64; do
  auditctl -l | grep -E -- "arch=${arch} .*-S adjtimex" >/dev/null \
    || { echo "no loaded adjtimex rule for ${arch}" >&2; exit 1; }
done
auditctl -l | grep -- 'audit_time_rules'
'''

# ---- grub2_audit_argument ---------------------------------------------------

S_GRUB_6_1 = r'''#!/usr/bin/env bash
# Rule: grub2_audit_argument
set -euo pipefail

DEFAULT_GRUB=/etc/default/grub
cp -a "$DEFAULT_GRUB" "$DEFAULT_GRUB.bak.$(date -u +%Y%m%dT%H%M%SZ)"

# existing BLS boot entries
grubby --update-kernel=ALL --args=audit=1

# kernels installed later take GRUB_CMDLINE_LINUX
if ! grep -qE '^GRUB_CMDLINE_LINUX=.*\baudit=1\b' "$DEFAULT_GRUB"; then
  sed -i -E 's/^(GRUB_CMDLINE_LINUX="[^"]*)"/\1 audit=1"/' "$DEFAULT_GRUB"
fi

grep -E '^GRUB_CMDLINE_LINUX=' "$DEFAULT_GRUB"
missing="$(grubby --info=ALL | awk '/^args=/ && !/audit=1/' | wc -l)"
[[ "$missing" -eq 0 ]] || { echo "$missing boot entries without audit=1" >&2; exit 1; }
echo "audit=1 set for all kernels (active after reboot)"
'''

S_GRUB_7_1 = r'''#!/usr/bin/env bash
# Rule: grub2_audit_argument
set -euo pipefail

CFG=/boot/grub2/grub.cfg
cp -a "$CFG" "$CFG.bak.$(date -u +%Y%m%dT%H%M%SZ)"

# append audit=1 to every kernel line that does not have it yet
sed -i -E '/^\s*linux(efi)?\s/{/\baudit=1\b/!s/$/ audit=1/}' "$CFG"

echo "kernel lines with audit=1:"
grep -cE '^\s*linux(efi)?\s.*\baudit=1\b' "$CFG"
'''

S_GRUB_7_2 = r'''#!/usr/bin/env bash
# Rule: grub2_audit_argument  (attempt 2)
# grub.cfg on this host only calls blscfg; the kernel command lines live in
# /boot/loader/entries. grubby edits those, /etc/default/grub covers
# kernels installed later.
set -euo pipefail

DEFAULT_GRUB=/etc/default/grub
cp -a "$DEFAULT_GRUB" "$DEFAULT_GRUB.bak.$(date -u +%Y%m%dT%H%M%SZ)"

grubby --update-kernel=ALL --args=audit=1

if ! grep -qE '^GRUB_CMDLINE_LINUX=.*\baudit=1\b' "$DEFAULT_GRUB"; then
  sed -i -E 's/^(GRUB_CMDLINE_LINUX="[^"]*)"/\1 audit=1"/' "$DEFAULT_GRUB"
fi

missing=0
while IFS= read -r args; do
  [[ "$args" == *audit=1* ]] || missing=$((missing + 1))
done < <(grubby --info=ALL | sed -n 's/^args="\(.*\)"$/\1/p')
(( missing == 0 )) || { echo "$missing entries lack audit=1" >&2; exit 1; }
grep -E '^GRUB_CMDLINE_LINUX=' "$DEFAULT_GRUB"
'''

# ---- set_firewalld_default_zone -------------------------------------------

S_FW_6_1 = r'''#!/usr/bin/env bash
# Rule: set_firewalld_default_zone  (default zone = drop)
set -euo pipefail

cp -a /etc/firewalld/firewalld.conf "/etc/firewalld/firewalld.conf.bak.$(date -u +%Y%m%dT%H%M%SZ)"

firewall-cmd --set-default-zone=drop
# keep ssh reachable in the new default zone
firewall-cmd --permanent --zone=drop --add-service=ssh

firewall-cmd --get-default-zone
firewall-cmd --permanent --zone=drop --list-services
'''

S_FW_6_2 = r'''#!/usr/bin/env bash
# Rule: set_firewalld_default_zone  (attempt 2)
# Switch the default zone to drop without cutting off management access:
# ssh (and the management network) are allowed in the drop zone
# permanently AND at runtime before the default zone changes. Attempt 1
# switched first and only added ssh to the permanent config.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
TARGET_ZONE=drop
MGMT_NET="${MGMT_NET:-10.20.0.0/24}"

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

fw() { firewall-cmd -q "$@"; }

ensure_service() {
  local zone="$1" svc="$2"
  if ! firewall-cmd --permanent --zone="$zone" --query-service="$svc" >/dev/null; then
    fw --permanent --zone="$zone" --add-service="$svc"
    log "permanent: added service ${svc} to ${zone}"
  fi
}

ensure_mgmt_rule() {
  local zone="$1" src="$2"
  local rule="rule family=ipv4 source address=${src} service name=ssh accept"
  if ! firewall-cmd --permanent --zone="$zone" --query-rich-rule="$rule" >/dev/null; then
    fw --permanent --zone="$zone" --add-rich-rule="$rule"
    log "permanent: ssh from ${src} accepted in ${zone}"
  fi
}

systemctl is-active --quiet firewalld || die "firewalld is not running"

tar -czf "/root/firewalld-${TS}.tar.gz" -C /etc firewalld
log "saved /etc/firewalld to /root/firewalld-${TS}.tar.gz"

# If any step fails, put the saved configuration back and reload it, so
# the host keeps the zone it had (and the evaluator keeps its session).
rollback() {
  log "restoring /etc/firewalld from /root/firewalld-${TS}.tar.gz"
  tar -xzf "/root/firewalld-${TS}.tar.gz" -C /etc
  firewall-cmd -q --reload || systemctl restart firewalld
}
trap 'rc=$?; if (( rc != 0 )); then rollback; fi' EXIT

current="$(firewall-cmd --get-default-zone)"
log "current default zone: ${current}"

# interfaces explicitly bound to the old zone would stay there
bound="$(firewall-cmd --zone="$current" --list-interfaces)"
if [[ -n "$bound" ]]; then log "interfaces bound to ${current}: ${bound}"; fi

# 1. allow management access in the target zone (permanent)
ensure_service "$TARGET_ZONE" ssh
ensure_mgmt_rule "$TARGET_ZONE" "$MGMT_NET"

# 2. load the permanent config into runtime while still in the old zone
fw --reload
firewall-cmd --zone="$TARGET_ZONE" --query-service=ssh >/dev/null \
  || die "ssh not allowed in ${TARGET_ZONE} at runtime after reload"

# 3. only now switch the default zone (runtime + permanent)
if [[ "$current" != "$TARGET_ZONE" ]]; then
  fw --set-default-zone="$TARGET_ZONE"
fi

# 4. move explicitly bound interfaces as well
for ifc in $bound; do
  fw --permanent --zone="$TARGET_ZONE" --change-interface="$ifc"
  fw --zone="$TARGET_ZONE" --change-interface="$ifc"
  log "moved ${ifc} to ${TARGET_ZONE}"
done

# 5. verify runtime and permanent state agree
[[ "$(firewall-cmd --get-default-zone)" == "$TARGET_ZONE" ]] || die "default zone is not ${TARGET_ZONE}"
grep -qE "^DefaultZone=${TARGET_ZONE}$" /etc/firewalld/firewalld.conf || die "firewalld.conf not updated"
firewall-cmd --permanent --zone="$TARGET_ZONE" --query-service=ssh >/dev/null || die "ssh missing (permanent)"
firewall-cmd --zone="$TARGET_ZONE" --query-service=ssh >/dev/null || die "ssh missing (runtime)"
firewall-cmd --check-config >/dev/null || die "firewall-cmd --check-config reports errors"
log "default zone ${TARGET_ZONE}; ssh allowed; management net ${MGMT_NET}"
'''

S_FW_7_1 = r'''#!/usr/bin/env bash
# Rule: set_firewalld_default_zone
set -euo pipefail

CONF=/etc/firewalld/firewalld.conf
cp -a "$CONF" "$CONF.bak.$(date -u +%Y%m%dT%H%M%SZ)"

if grep -qE '^DefaultZone=' "$CONF"; then
  sed -i -E 's/^DefaultZone=.*/DefaultZone=drop/' "$CONF"
else
  echo 'DefaultZone=drop' >> "$CONF"
fi

# the drop zone keeps established sessions; a reload is enough
firewall-cmd --reload
firewall-cmd --get-default-zone
grep '^DefaultZone=' "$CONF"
'''

S_FW_7_2 = r'''#!/usr/bin/env bash
# Rule: set_firewalld_default_zone  (attempt 2)
# Attempt 1 edited DefaultZone and reloaded: the evaluator's new SSH
# connections were dropped. Allow ssh in the drop zone first (permanent,
# then reload into runtime), switch the default zone only afterwards.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
ZONE=drop

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

systemctl is-active --quiet firewalld || die "firewalld not running"
tar -czf "/root/firewalld-${TS}.tar.gz" -C /etc firewalld

if ! firewall-cmd --permanent --zone="$ZONE" --query-service=ssh >/dev/null; then
  firewall-cmd -q --permanent --zone="$ZONE" --add-service=ssh
fi
firewall-cmd -q --reload

# runtime must allow ssh in the drop zone before anything moves there
firewall-cmd --zone="$ZONE" --query-service=ssh >/dev/null || die "ssh not active in ${ZONE}"

firewall-cmd -q --set-default-zone="$ZONE"

[[ "$(firewall-cmd --get-default-zone)" == "$ZONE" ]] || die "default zone not ${ZONE}"
grep -qx "DefaultZone=${ZONE}" /etc/firewalld/firewalld.conf || die "firewalld.conf not updated"
firewall-cmd --zone="$ZONE" --list-services
log "default zone ${ZONE}, ssh allowed (runtime and permanent)"
'''

# ---- sudo_remove_nopasswd ---------------------------------------------------

S_SUDO_6_1 = r'''#!/usr/bin/env bash
# Rule: sudo_remove_nopasswd
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
BK="/root/sudoers-backup-${TS}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

mapfile -t files < <(grep -lE '^[^#]*\bNOPASSWD\s*:' /etc/sudoers /etc/sudoers.d/* 2>/dev/null || true)
if (( ${#files[@]} == 0 )); then
  echo "no NOPASSWD entries"
  exit 0
fi

# backups outside /etc/sudoers.d so sudo never reads them
mkdir -p "$BK"
cp -a /etc/sudoers /etc/sudoers.d "$BK/"

for f in "${files[@]}"; do
  tmp="$WORK/$(basename "$f")"
  cp -a -- "$f" "$tmp"
  # keep each rule, drop only the NOPASSWD tag
  sed -i -E '/^[^#]/ s/\bNOPASSWD\s*:\s*//g' "$tmp"
  visudo -cf "$tmp"
  install -m 0440 -o root -g root "$tmp" "$f"
  echo "fixed $f"
done

visudo -c
if grep -rsE '^[^#]*\bNOPASSWD' /etc/sudoers /etc/sudoers.d/; then
  echo "NOPASSWD still present" >&2
  exit 1
fi
'''

S_SUDO_7_1 = r'''#!/usr/bin/env bash
# Rule: sudo_remove_nopasswd
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
BK="/root/sudoers-backup-${TS}"
mkdir -p "$BK"
cp -a /etc/sudoers /etc/sudoers.d "$BK/"

for f in /etc/sudoers /etc/sudoers.d/*; do
  [[ -f "$f" ]] || continue
  grep -q 'NOPASSWD' "$f" || continue
  tmp="$(mktemp)"
  cp -a -- "$f" "$tmp"
  sed -i '/NOPASSWD/d' "$tmp"          # no partial rules left behind
  visudo -cf "$tmp"
  install -m 0440 -o root -g root "$tmp" "$f"
  rm -f "$tmp"
  echo "cleaned $f"
done

visudo -c
if grep -rs NOPASSWD /etc/sudoers /etc/sudoers.d/; then exit 1; fi
echo "no NOPASSWD left"
'''

S_SUDO_7_2 = r'''#!/usr/bin/env bash
# Rule: sudo_remove_nopasswd  (attempt 2)
# Deleting whole lines also deleted the rules that grant sudo at all
# (stigadm lost every privilege). Keep the rules, remove only the tag.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
BK="/root/sudoers-backup-${TS}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

mkdir -p "$BK"
cp -a /etc/sudoers /etc/sudoers.d "$BK/"

for f in /etc/sudoers /etc/sudoers.d/*; do
  [[ -f "$f" ]] || continue
  grep -qE '^[^#]*\bNOPASSWD\s*:' "$f" || continue
  tmp="$WORK/$(basename "$f")"
  cp -a -- "$f" "$tmp"
  sed -i -E '/^[^#]/ s/\bNOPASSWD\s*:\s*//g' "$tmp"
  visudo -cf "$tmp"
  install -m 0440 -o root -g root "$tmp" "$f"
  echo "removed NOPASSWD tag in $f"
done

visudo -c
if grep -rsE '^[^#]*\bNOPASSWD' /etc/sudoers /etc/sudoers.d/; then
  echo "NOPASSWD still present" >&2; exit 1
fi
sudo -l -U stigadm | tail -n 3
'''

# ---- aide_build_database ----------------------------------------------------

S_AIDE_6_1 = r'''#!/usr/bin/env bash
# Rule: aide_build_database
# Install AIDE and build the baseline database.
set -euo pipefail

dnf -y install aide

# first run takes a few minutes on a full root filesystem
aide --init

ls -l /var/lib/aide/
echo "AIDE database initialised"
'''

S_AIDE_6_2 = r'''#!/usr/bin/env bash
# Rule: aide_build_database  (attempt 2)
# aide --init only writes aide.db.new.gz; the check wants aide.db.gz.
set -euo pipefail

DB=/var/lib/aide/aide.db.gz
NEW=/var/lib/aide/aide.db.new.gz

rpm -q aide >/dev/null 2>&1 || dnf -y --setopt=timeout=30 install aide

if [[ -f "$DB" ]]; then cp -a "$DB" "$DB.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi
aide --init
mv -f "$NEW" "$DB"
chmod 0600 "$DB"

# exit codes 1-7 only report differences; 14+ are errors
rc=0
aide --check >/dev/null || rc=$?
(( rc < 14 )) || { echo "aide --check failed with $rc" >&2; exit 1; }
ls -l "$DB"
'''

S_AIDE_7_1 = r'''#!/usr/bin/env bash
# Rule: aide_build_database
# Install AIDE if needed, keep volatile paths out of the database, build the
# baseline and put it where aide --check (and the scanner) expect it.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
CONF=/etc/aide.conf
DB=/var/lib/aide/aide.db.gz
NEW=/var/lib/aide/aide.db.new.gz
EXCLUDES=(
  '!/var/log/journal'
  '!/var/lib/sss/db'
  '!/var/lib/dnf'
  '!/var/cache'
  '!/var/spool/postfix'
)

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

ensure_package() {
  local pkg="$1"
  if rpm -q "$pkg" >/dev/null 2>&1; then
    log "$pkg already installed"
    return 0
  fi
  dnf -y --setopt=timeout=30 --setopt=retries=2 install "$pkg" \
    || die "could not install $pkg"
}

add_exclude() {
  local rule="$1"
  if grep -qxF -- "$rule" "$CONF"; then
    return 0
  fi
  printf '%s\n' "$rule" >> "$CONF"
  log "excluded ${rule#!}"
}

ensure_package aide
[[ -f "$CONF" ]] || die "$CONF missing"

# the database of a full root filesystem needs some room
avail_kb="$(df -Pk /var/lib/aide | awk 'NR==2 {print $4}')"
(( avail_kb > 204800 )) || die "less than 200 MB free under /var/lib/aide"

# 1. exclusions (appended once, kept together at the end of the file)
cp -a "$CONF" "${CONF}.bak.${TS}"
if ! grep -q '^# STIG remediation: volatile paths' "$CONF"; then
  printf '\n# STIG remediation: volatile paths excluded (%s)\n' "$TS" >> "$CONF"
fi
for rule in "${EXCLUDES[@]}"; do
  add_exclude "$rule"
done
log "config now has $(grep -c '^!' "$CONF") exclusion rules"

# aide refuses to run with a broken config; check before the long init
aide --config-check >/dev/null || {
  cp -a "${CONF}.bak.${TS}" "$CONF"
  die "aide --config-check failed; config restored"
}

# 2. baseline
if [[ -f "$DB" ]]; then cp -a "$DB" "${DB}.bak.${TS}"; fi
log "building AIDE database (takes a few minutes)"
nice -n 10 aide --init >/dev/null

# 3. aide --init writes the .new file; the check uses aide.db.gz
[[ -s "$NEW" ]] || die "aide --init produced no $NEW"
mv -f "$NEW" "$DB"
chown root:root "$DB"
chmod 0600 "$DB"

# 4. verify: a check right after init should report no errors
rc=0
aide --check >/dev/null || rc=$?
if (( rc >= 14 )); then
  die "aide --check error (exit $rc)"
fi
log "aide --check exit ${rc} (0-7 = differences only)"
ls -l "$DB" >&2
log "AIDE baseline at ${DB}"
'''

# ---- aide_periodic_cron_checking --------------------------------------------

S_AIDECRON_6_1 = r'''#!/usr/bin/env bash
# Rule: aide_periodic_cron_checking
set -euo pipefail

CRON=/etc/cron.d/aide-check
cat > "$CRON" <<'EOF'
# STIG: daily AIDE integrity check, report mailed to root
SHELL=/bin/bash
PATH=/usr/sbin:/usr/bin:/sbin:/bin
05 4 * * * root /usr/sbin/aide --check 2>&1 | /bin/mail -s "$(hostname) - daily AIDE integrity check" root
EOF
chmod 0644 "$CRON"

command -v mail >/dev/null || dnf -y install s-nail
grep aide "$CRON"
'''

S_AIDECRON_7_1 = r'''#!/usr/bin/env bash
# Rule: aide_periodic_cron_checking
# Daily AIDE check from cron (what the scanner reads) and a systemd timer
# (journal logging, easier to monitor).
set -euo pipefail

CRON=/etc/cron.d/aide-check
UNIT_DIR=/etc/systemd/system

cat > "$CRON" <<'EOF'
# STIG: daily AIDE integrity check, report mailed to root
SHELL=/bin/bash
PATH=/usr/sbin:/usr/bin:/sbin:/bin
05 4 * * * root /usr/sbin/aide --check 2>&1 | /bin/mail -s "$(hostname) - daily AIDE integrity check" root
EOF
chmod 0644 "$CRON"

cat > "$UNIT_DIR/aidecheck.service" <<'EOF'
[Unit]
Description=AIDE integrity check
ConditionPathExists=/var/lib/aide/aide.db.gz

[Service]
Type=oneshot
ExecStart=/usr/sbin/aide --check
EOF

cat > "$UNIT_DIR/aidecheck.timer" <<'EOF'
[Unit]
Description=Daily AIDE integrity check

[Timer]
OnCalendar=*-*-* 04:35:00
Persistent=true

[Install]
WantedBy=timers.target
EOF

command -v mail >/dev/null || dnf -y install s-nail
systemctl daemon-reload
systemctl enable --now aidecheck.timer
systemctl list-timers aidecheck.timer --no-pager
grep aide "$CRON"
'''

# ---- sysctl_net_ipv4_conf_all_accept_redirects --------------------------------

S_REDIR_6_1 = r'''#!/usr/bin/env bash
# Rule: sysctl_net_ipv4_conf_all_accept_redirects
set -euo pipefail

KEY=net.ipv4.conf.all.accept_redirects
CONF=/etc/sysctl.conf
cp -a "$CONF" "$CONF.bak.$(date -u +%Y%m%dT%H%M%SZ)"

if grep -qE "^\s*${KEY//./\\.}\s*=" "$CONF"; then
  sed -i -E "s/^\s*${KEY//./\\.}\s*=.*/${KEY} = 0/" "$CONF"
else
  echo "${KEY} = 0" >> "$CONF"
fi

sysctl -p "$CONF"
[[ "$(sysctl -n "$KEY")" == 0 ]]
echo "$KEY = 0"
'''

S_REDIR_6_2 = r'''#!/usr/bin/env bash
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
'''

S_REDIR_7_1 = r'''#!/usr/bin/env bash
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
'''

# ---- sysctl_kernel_dmesg_restrict -------------------------------------------

S_DMESG_6_1 = r'''#!/usr/bin/env bash
# Rule: sysctl_kernel_dmesg_restrict
# Only privileged users may read the kernel ring buffer.
set -euo pipefail

FILE=/etc/sysctl.d/99-stig-dmesg.conf
if [[ -f "$FILE" ]]; then cp -a "$FILE" "$FILE.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi
echo 'kernel.dmesg_restrict = 1' > "$FILE"
chmod 0644 "$FILE"

sysctl -p "$FILE"
[[ "$(sysctl -n kernel.dmesg_restrict)" == 1 ]]
echo "kernel.dmesg_restrict = 1"
'''

S_DMESG_7_1 = r'''#!/usr/bin/env bash
# Rule: sysctl_kernel_dmesg_restrict
set -euo pipefail

KEY=kernel.dmesg_restrict
FILE=/etc/sysctl.d/99-stig.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"

install -d -m 0755 /etc/sysctl.d
touch "$FILE"
cp -a "$FILE" "${FILE}.bak.${TS}"
if grep -qE "^\s*${KEY//./[./]}\s*=" "$FILE"; then
  sed -i -E "s|^\s*${KEY//./[./]}\s*=.*|${KEY} = 1|" "$FILE"
else
  echo "${KEY} = 1" >> "$FILE"
fi

# a conflicting value in any other sysctl file would fail the scan
conflicts="$(grep -rHnE --include='*.conf' "^\s*${KEY//./[./]}\s*=\s*0" \
  /etc/sysctl.conf /etc/sysctl.d /run/sysctl.d /usr/lib/sysctl.d 2>/dev/null || true)"
if [[ -n "$conflicts" ]]; then
  echo "conflicting settings:" >&2
  echo "$conflicts" >&2
  exit 1
fi

# sysctl -p would only read /etc/sysctl.conf
sysctl --system >/dev/null
[[ "$(sysctl -n "$KEY")" == 1 ]]
echo "${KEY} = 1"
'''

# ---- kernel_module_usb-storage_disabled -------------------------------------

S_KMOD_6_1 = r'''#!/usr/bin/env bash
# Rule: kernel_module_usb-storage_disabled
set -euo pipefail

CONF=/etc/modprobe.d/blacklist.conf
touch "$CONF"
cp -a "$CONF" "$CONF.bak.$(date -u +%Y%m%dT%H%M%SZ)"

grep -qxF 'blacklist usb-storage' "$CONF" || echo 'blacklist usb-storage' >> "$CONF"

grep -n usb-storage "$CONF"
echo "usb-storage blacklisted"
'''

S_KMOD_6_2 = r'''#!/usr/bin/env bash
# Rule: kernel_module_usb-storage_disabled  (attempt 2)
# A blacklist alone only stops autoloading; an install override makes any
# explicit modprobe a no-op.
set -euo pipefail

CONF=/etc/modprobe.d/usb-storage.conf
if [[ -f "$CONF" ]]; then cp -a "$CONF" "$CONF.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi

cat > "$CONF" <<'EOF'
# STIG: USB mass storage disabled
install usb-storage /bin/true
blacklist usb-storage
EOF
chmod 0644 "$CONF"

modprobe -n -v usb-storage
'''

S_KMOD_6_3 = r'''#!/usr/bin/env bash
# Rule: kernel_module_usb-storage_disabled  (attempt 3)
# The check wants 'install usb-storage /bin/false' (a failing install
# command), not /bin/true, plus the blacklist line.
set -euo pipefail

CONF=/etc/modprobe.d/usb-storage.conf
if [[ -f "$CONF" ]]; then cp -a "$CONF" "$CONF.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi

cat > "$CONF" <<'EOF'
# STIG: USB mass storage disabled
install usb-storage /bin/false
blacklist usb-storage
EOF
chmod 0644 "$CONF"

# the config only affects future loads
if lsmod | grep -q '^usb_storage\b'; then
  modprobe -r usb-storage
fi

modprobe -n -v usb-storage | grep -q '/bin/false'
if lsmod | grep -q '^usb_storage\b'; then echo "usb_storage still loaded" >&2; exit 1; fi
echo "usb-storage disabled"
'''

S_KMOD_7_1 = r'''#!/usr/bin/env bash
# Rule: kernel_module_usb-storage_disabled
set -euo pipefail

CONF=/etc/modprobe.d/usb-storage.conf
TS="$(date -u +%Y%m%dT%H%M%SZ)"

if [[ -f "$CONF" ]]; then cp -a "$CONF" "${CONF}.bak.${TS}"; fi
printf '%s\n' \
  '# STIG kernel_module_usb-storage_disabled' \
  'install usb-storage /bin/false' \
  'blacklist usb-storage' > "$CONF"
chmod 0644 "$CONF"

# unload now if it is in use; the config only covers future loads
if lsmod | awk '{print $1}' | grep -qx usb_storage; then
  modprobe -r usb-storage
fi

modprobe -n -v usb-storage
if lsmod | awk '{print $1}' | grep -qx usb_storage; then
  echo "usb_storage still loaded" >&2; exit 1
fi
'''

# ---- mount_option_tmp_noexec ------------------------------------------------

S_TMP_6_1 = r'''#!/usr/bin/env bash
# Rule: mount_option_tmp_noexec
# /tmp is a separate tmpfs; add the options to the running mount.
set -euo pipefail

findmnt -n /tmp
mount -o remount,nodev,nosuid,noexec /tmp

findmnt -n -o OPTIONS /tmp | tr ',' '\n' | grep -x noexec
echo "/tmp remounted noexec"
'''

S_TMP_6_2 = r'''#!/usr/bin/env bash
# Rule: mount_option_tmp_noexec  (attempt 2)
# /tmp comes from systemd's tmp.mount: set the options on the unit so they
# persist, and restart the unit to apply them.
set -euo pipefail

DIR=/etc/systemd/system/tmp.mount.d
install -d -m 0755 "$DIR"
cat > "$DIR/50-stig-options.conf" <<'EOF'
[Mount]
Options=mode=1777,strictatime,nosuid,nodev,noexec,size=50%%,nr_inodes=1m
EOF

systemctl daemon-reload
systemctl restart tmp.mount
findmnt -n -o OPTIONS /tmp | grep -q noexec
echo "tmp.mount restarted with noexec"
'''

S_TMP_6_3 = r'''#!/usr/bin/env bash
# Rule: mount_option_tmp_noexec  (attempt 3)
# The scanner reads /etc/fstab; systemd turns the fstab line into tmp.mount.
set -euo pipefail

FSTAB=/etc/fstab
LINE='tmpfs   /tmp    tmpfs   defaults,mode=1777,nodev,nosuid,noexec   0 0'
cp -a "$FSTAB" "$FSTAB.bak.$(date -u +%Y%m%dT%H%M%SZ)"

if awk '$1 !~ /^#/ && $2 == "/tmp" {found=1} END {exit !found}' "$FSTAB"; then
  awk -v line="$LINE" '$1 !~ /^#/ && $2 == "/tmp" {print line; next} {print}' "$FSTAB" > "$FSTAB.new"
  mv -f "$FSTAB.new" "$FSTAB"
else
  echo "$LINE" >> "$FSTAB"
fi

systemctl daemon-reload
findmnt --verify --tab-file "$FSTAB"
grep -E '\s/tmp\s' "$FSTAB"
'''

S_TMP_6_4 = r'''#!/usr/bin/env bash
# Rule: mount_option_tmp_noexec  (attempt 4)
# What the evaluator wants, learned from attempts 1-3:
#   - /etc/fstab must carry a /tmp entry with noexec (attempt 1 had none),
#   - restarting tmp.mount fails while /tmp is busy (attempt 2),
#   - the running /tmp must be noexec too (attempt 3 only fixed fstab).
# So: fstab entry, then a live remount; no unit restart.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
FSTAB=/etc/fstab
FSTAB_LINE='tmpfs   /tmp    tmpfs   defaults,mode=1777,strictatime,nodev,nosuid,noexec   0 0'
WANT_OPTS=(nodev nosuid noexec)

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# has_opt "rw,nosuid,nodev" nodev
has_opt() {
  local opts=",$1," opt="$2"
  [[ "$opts" == *",${opt},"* ]]
}

fstab_opts() {
  awk '$1 !~ /^#/ && $2 == "/tmp" {print $4}' "$FSTAB"
}

runtime_opts() {
  findmnt -n -o OPTIONS /tmp
}

write_fstab_entry() {
  cp -a "$FSTAB" "${FSTAB}.bak.${TS}"
  if [[ -n "$(fstab_opts)" ]]; then
    awk -v line="$FSTAB_LINE" '$1 !~ /^#/ && $2 == "/tmp" {print line; next} {print}' \
      "$FSTAB" > "${FSTAB}.new.${TS}"
  else
    { cat "$FSTAB"; echo "$FSTAB_LINE"; } > "${FSTAB}.new.${TS}"
  fi
  # refuse to install an fstab that findmnt cannot parse
  if ! findmnt --verify --tab-file "${FSTAB}.new.${TS}" >/dev/null 2>&1; then
    rm -f "${FSTAB}.new.${TS}"
    die "generated fstab does not verify"
  fi
  chmod --reference="$FSTAB" "${FSTAB}.new.${TS}"
  mv -f "${FSTAB}.new.${TS}" "$FSTAB"
  restorecon "$FSTAB" 2>/dev/null || true
  log "fstab: $(grep -E '^\S+\s+/tmp\s' "$FSTAB")"
}

restore_fstab() {
  if [[ -f "${FSTAB}.bak.${TS}" ]]; then
    cp -a "${FSTAB}.bak.${TS}" "$FSTAB"
    systemctl daemon-reload
    log "fstab restored from ${FSTAB}.bak.${TS}"
  fi
}

mountpoint -q /tmp || die "/tmp is not a separate mount; this fix expects tmp.mount"
log "/tmp provided by: $(systemctl is-active tmp.mount 2>/dev/null || echo unknown) tmp.mount"
log "runtime options before: $(runtime_opts)"

# 1. persistent: the fstab entry the scanner reads
write_fstab_entry
systemctl daemon-reload

# 2. live: remount in place (works while files are open)
if ! mount -o remount,nodev,nosuid,noexec /tmp; then
  restore_fstab
  die "remount of /tmp failed"
fi

# 3. verify both
opts="$(runtime_opts)"
for o in "${WANT_OPTS[@]}"; do
  has_opt "$opts" "$o" || die "runtime /tmp lacks ${o} (${opts})"
done
fopts="$(fstab_opts)"
for o in "${WANT_OPTS[@]}"; do
  has_opt "$fopts" "$o" || die "fstab /tmp entry lacks ${o} (${fopts})"
done

# the unit generated from fstab must agree as well
systemctl show -p Options tmp.mount | grep -q noexec \
  || log "warning: tmp.mount unit options do not show noexec yet"
log "/tmp: runtime ${opts}; fstab ${fopts}"
'''

S_TMP_7_1 = r'''#!/usr/bin/env bash
# Rule: mount_option_tmp_noexec
# /tmp is systemd's tmp.mount. Two places: the fstab line the scanner reads,
# and the unit's own options, applied by restarting the unit.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
FSTAB=/etc/fstab
LINE='tmpfs   /tmp    tmpfs   defaults,mode=1777,nodev,nosuid,noexec   0 0'

cp -a "$FSTAB" "${FSTAB}.bak.${TS}"
if awk '$1 !~ /^#/ && $2 == "/tmp" {f=1} END {exit !f}' "$FSTAB"; then
  awk -v line="$LINE" '$1 !~ /^#/ && $2 == "/tmp" {print line; next} {print}' "$FSTAB" > "${FSTAB}.new"
  mv -f "${FSTAB}.new" "$FSTAB"
else
  echo "$LINE" >> "$FSTAB"
fi
findmnt --verify --tab-file "$FSTAB"

install -d -m 0755 /etc/systemd/system/tmp.mount.d
cat > /etc/systemd/system/tmp.mount.d/options.conf <<'EOF'
[Mount]
Options=mode=1777,strictatime,nosuid,nodev,noexec,size=50%%,nr_inodes=1m
EOF

systemctl daemon-reload
systemctl restart tmp.mount
findmnt -n -o OPTIONS /tmp | tr ',' '\n' | grep -x noexec
'''

S_TMP_7_2 = r'''#!/usr/bin/env bash
# Rule: mount_option_tmp_noexec  (attempt 2)
# Restarting tmp.mount fails while /tmp is in use. Keep the fstab entry and
# remount the live /tmp in place instead.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
FSTAB=/etc/fstab
LINE='tmpfs   /tmp    tmpfs   defaults,mode=1777,nodev,nosuid,noexec   0 0'

cp -a "$FSTAB" "${FSTAB}.bak.${TS}"
if awk '$1 !~ /^#/ && $2 == "/tmp" {f=1} END {exit !f}' "$FSTAB"; then
  awk -v line="$LINE" '$1 !~ /^#/ && $2 == "/tmp" {print line; next} {print}' "$FSTAB" > "${FSTAB}.new"
  mv -f "${FSTAB}.new" "$FSTAB"
else
  echo "$LINE" >> "$FSTAB"
fi
findmnt --verify --tab-file "$FSTAB"
systemctl daemon-reload

mount -o remount,nodev,nosuid,noexec /tmp

opts="$(findmnt -n -o OPTIONS /tmp)"
for o in nodev nosuid noexec; do
  [[ ",${opts}," == *",${o},"* ]] || { echo "/tmp lacks ${o}: ${opts}" >&2; exit 1; }
done
echo "/tmp: ${opts}"
'''

# ---- package_telnet-server_removed ------------------------------------------

S_TELNET_6_1 = r'''#!/usr/bin/env bash
# Rule: package_telnet-server_removed
set -euo pipefail

if systemctl list-unit-files telnet.socket >/dev/null 2>&1; then
  systemctl disable --now telnet.socket || true
fi

if rpm -q telnet-server >/dev/null 2>&1; then
  dnf -y remove telnet-server
fi

if rpm -q telnet-server >/dev/null 2>&1; then
  echo "telnet-server still installed" >&2
  exit 1
fi
echo "telnet-server not installed"
'''

# ---- service_kdump_disabled -------------------------------------------------

S_KDUMP_7_1 = r'''#!/usr/bin/env bash
# Rule: service_kdump_disabled
set -euo pipefail

systemctl disable --now kdump.service
systemctl mask kdump.service

# with kdump off the crashkernel reservation is wasted memory
if grubby --info=ALL | grep -q 'crashkernel='; then
  cp -a /etc/default/grub "/etc/default/grub.bak.$(date -u +%Y%m%dT%H%M%SZ)"
  grubby --update-kernel=ALL --remove-args=crashkernel
  sed -i -E 's/[[:space:]]*crashkernel=[^[:space:]"]+//' /etc/default/grub
fi

[[ "$(systemctl is-enabled kdump.service 2>/dev/null || true)" == masked ]]
if systemctl is-active --quiet kdump.service; then
  echo "kdump still active" >&2; exit 1
fi
echo "kdump disabled and masked"
'''

# ---- sshd_enable_warning_banner ---------------------------------------------

S_SSHBANNER_6_1 = r'''#!/usr/bin/env bash
# Rule: sshd_enable_warning_banner
set -euo pipefail

DROPIN=/etc/ssh/sshd_config.d/00-stig.conf
touch "$DROPIN"; chmod 0600 "$DROPIN"
cp -a "$DROPIN" "$DROPIN.bak.$(date -u +%Y%m%dT%H%M%SZ)"

# network logins get the network banner file
if grep -qiE '^\s*Banner\b' "$DROPIN"; then
  sed -i -E 's|^\s*Banner\b.*|Banner /etc/issue.net|I' "$DROPIN"
else
  echo 'Banner /etc/issue.net' >> "$DROPIN"
fi
[[ -s /etc/issue.net ]] || cp /etc/issue /etc/issue.net

sshd -t
systemctl reload sshd
sshd -T | grep -i '^banner '
'''

S_SSHBANNER_6_2 = r'''#!/usr/bin/env bash
# Rule: sshd_enable_warning_banner  (attempt 2)
# The check expects sshd to show /etc/issue (the DoD notice), not issue.net.
set -euo pipefail

DROPIN=/etc/ssh/sshd_config.d/00-stig.conf
touch "$DROPIN"; chmod 0600 "$DROPIN"
cp -a "$DROPIN" "$DROPIN.bak.$(date -u +%Y%m%dT%H%M%SZ)"

if grep -qiE '^\s*Banner\b' "$DROPIN"; then
  sed -i -E 's|^\s*Banner\b.*|Banner /etc/issue|I' "$DROPIN"
else
  echo 'Banner /etc/issue' >> "$DROPIN"
fi

sshd -t
systemctl reload sshd
[[ "$(sshd -T | awk '$1=="banner"{print $2}')" == /etc/issue ]]
echo "sshd banner: /etc/issue"
'''

S_SSHBANNER_7_1 = r'''#!/usr/bin/env bash
# Rule: sshd_enable_warning_banner
set -euo pipefail

DROPIN=/etc/ssh/sshd_config.d/00-stig.conf
install -d -m 0755 /etc/ssh/sshd_config.d
touch "$DROPIN"; chmod 0600 "$DROPIN"
cp -a "$DROPIN" "$DROPIN.bak.$(date -u +%Y%m%dT%H%M%SZ)"

if grep -qiE '^\s*Banner\b' "$DROPIN"; then
  sed -i -E 's|^\s*Banner\b.*|Banner /etc/issue|I' "$DROPIN"
else
  echo 'Banner /etc/issue' >> "$DROPIN"
fi

# restart so the scanner sees it; the unit validates the config itself
systemctl restart sshd
systemctl is-active --quiet sshd
grep -i '^Banner' "$DROPIN"
'''

# ---- banner_etc_issue -------------------------------------------------------

S_ISSUE_6_1 = r'''#!/usr/bin/env bash
# Rule: banner_etc_issue
set -euo pipefail

cp -a /etc/issue "/etc/issue.bak.$(date -u +%Y%m%dT%H%M%SZ)"

# DoD logon notice
printf '%s\n' "I've read & consent to terms in IS user agreem't." > /etc/issue
chmod 0644 /etc/issue
restorecon /etc/issue 2>/dev/null || true

cat /etc/issue
'''

_ISSUE_HEAD_6_2 = r'''#!/usr/bin/env bash
# Rule: banner_etc_issue  (attempt 2)
# The short "I've read & consent" form is only for devices that cannot show
# the full notice; the check wants the full DoD text, word for word.
set -euo pipefail

TS="$(date -u +%Y%m%dT%H%M%SZ)"
ISSUE=/etc/issue
TMP="$(mktemp)"
trap 'rm -f "$TMP"' EXIT

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# collapse all whitespace so wrapping differences don't matter in the check
normalize() { tr -s '[:space:]' ' ' < "$1" | sed -E 's/^ //; s/ $//'; }

# quoted heredoc: no expansion, the text is copied exactly
cat > "$TMP" <<'EOF'
'''

_ISSUE_TAIL_6_2 = r'''EOF

# sanity checks on the text itself
grep -q '^You are accessing a U.S. Government (USG) Information System (IS)' "$TMP" \
  || die "banner text does not start with the DoD notice"
grep -q 'See User Agreement for details\.$' "$TMP" || die "banner text truncated"
words="$(wc -w < "$TMP")"
(( words > 200 )) || die "banner has only ${words} words"

if [[ -f "$ISSUE" ]]; then
  cp -a -- "$ISSUE" "${ISSUE}.bak.${TS}"
  if [[ "$(normalize "$ISSUE")" == "$(normalize "$TMP")" ]]; then
    log "/etc/issue already carries the DoD notice"
  fi
fi

install -m 0644 -o root -g root "$TMP" "$ISSUE"
restorecon "$ISSUE" 2>/dev/null || true

# verify what landed on disk
[[ "$(normalize "$ISSUE")" == "$(normalize "$TMP")" ]] || die "/etc/issue differs after install"
log "/etc/issue: $(wc -l < "$ISSUE") lines, ${words} words"
'''

S_ISSUE_6_2 = _ISSUE_HEAD_6_2 + DOD_BANNER + _ISSUE_TAIL_6_2

_ISSUE_HEAD_7_1 = r'''#!/usr/bin/env bash
# Rule: banner_etc_issue
# Full DoD notice in /etc/issue, written with a quoted heredoc so nothing
# in the text is expanded or re-wrapped.
set -euo pipefail

ISSUE=/etc/issue
if [[ -f "$ISSUE" ]]; then cp -a "$ISSUE" "$ISSUE.bak.$(date -u +%Y%m%dT%H%M%SZ)"; fi

cat > "$ISSUE" <<'EOF'
'''

_ISSUE_TAIL_7_1 = r'''EOF
chmod 0644 "$ISSUE"
restorecon "$ISSUE" 2>/dev/null || true

head -c 80 "$ISSUE"; echo
grep -c . "$ISSUE"
'''

S_ISSUE_7_1 = _ISSUE_HEAD_7_1 + DOD_BANNER + _ISSUE_TAIL_7_1

# ---- selinux_state ----------------------------------------------------------

S_SELINUX_7_1 = r'''#!/usr/bin/env bash
# Rule: selinux_state
set -euo pipefail

CFG=/etc/selinux/config
cp -a "$CFG" "$CFG.bak.$(date -u +%Y%m%dT%H%M%SZ)"

sed -i -E 's/^SELINUX=.*/SELINUX=enforcing/' "$CFG"
grep -q '^SELINUX=enforcing$' "$CFG"

mode="$(getenforce)"
case "$mode" in
  Permissive) setenforce 1 ;;
  Disabled)   echo "SELinux disabled: enforcing only after relabel and reboot" >&2 ;;
esac

# relabel on next boot after any mode change
touch /.autorelabel
sestatus
'''

# ---------------------------------------------------------------------------
# Runs: per rule, the attempts in order. Each attempt: the retrieval (tips in
# rank order with similarity), the script, the gold label for every
# retrieved tip, the evaluator result and (for failures) what the evaluator
# reported.
# ---------------------------------------------------------------------------


def Y(note: str) -> tuple[bool, str]:
    """Gold label: the script followed the tip."""
    return (True, note)


def N(note: str) -> tuple[bool, str]:
    """Gold label: the script did not follow the tip."""
    return (False, note)


PASS = (True, None)
CLEAN = (False, "clean_failure")
GAP = (False, "evaluator_gap")
HEALTH = (False, "health_failure")


def att(retrieval, script, labels, result, detail=None, extra=0):
    return {"retrieval": retrieval, "script": script, "labels": labels, "result": result,
            "detail": detail, "extra": extra}


# Retrieval lists (tip_ref, similarity) in rank order. The query is built
# from the rule, so a rule's retrieval repeats across attempts unless the
# failure text added to the query pulls in another tip.
R_MACS = [("sshd-macs-cp-1", 0.91), ("sshd-macs-cp-3", 0.88), ("sshd-macs-cp-2", 0.86),
          ("sshd-macs-cp-4", 0.79), ("sshd-macs-cp-5", 0.74)]
R_CP = [("crypto-policy-set-fips", 0.90), ("crypto-policy-fips-mode-setup", 0.81),
        ("crypto-policy-backend-symlinks", 0.70), ("sshd-macs-cp-1", 0.57)]
R_CP_RETRY = [("crypto-policy-set-fips", 0.90), ("crypto-policy-fips-mode-setup", 0.81),
              ("crypto-policy-backend-symlinks", 0.70), ("gen-reboot-pending", 0.63),
              ("sshd-macs-cp-1", 0.57)]
R_ROOT = [("sshd-root-dropin-first", 0.91), ("sshd-root-match-exception", 0.77),
          ("gen-sshd-validate", 0.58), ("gen-sshd-restart-skip-check", 0.52)]
R_MAXAUTH = [("sshd-maxauth-dropin", 0.89), ("sshd-maxauth-client-identities", 0.66),
             ("gen-sshd-validate", 0.55), ("gen-idempotent-edit", 0.47)]
R_IDLE = [("sshd-idle-interval-600", 0.90), ("sshd-idle-countmax-zero", 0.84),
          ("sshd-idle-effective-value", 0.70), ("gen-sshd-validate", 0.51)]
R_X11 = [("sshd-x11-inplace", 0.90), ("sshd-x11-remove-xauth", 0.63), ("gen-dropin-over-main", 0.50),
         ("gen-service-reload", 0.46)]
R_FAILLOCK = [("faillock-authselect-feature", 0.88), ("faillock-first-auth-line", 0.81),
              ("gen-authselect-no-hand-edit", 0.62), ("gen-backup-before-edit", 0.45)]
R_FAILLOCK_RETRY = [("faillock-authselect-feature", 0.88), ("faillock-first-auth-line", 0.81),
                    ("gen-authselect-no-hand-edit", 0.62), ("faillock-authselect-check", 0.57)]
R_DENYROOT = [("faillock-root-even-deny-conf", 0.90), ("faillock-root-selftest", 0.74),
              ("faillock-root-reset-tally", 0.69), ("gen-verify-effective", 0.48)]
R_MINLEN = [("pwquality-minlen-conf", 0.90), ("pwquality-minlen-pam-args", 0.78),
            ("gen-dropin-over-main", 0.52), ("gen-authselect-no-hand-edit", 0.50)]
R_UCREDIT = [("pwquality-credit-negative", 0.87), ("pwquality-credit-all-classes", 0.71),
             ("pwquality-minlen-conf", 0.63), ("gen-dropin-over-main", 0.49)]
R_SPACE = [("auditd-space-left-action-email", 0.90), ("auditd-space-left-percent", 0.72),
           ("gen-backup-before-edit", 0.47), ("gen-service-reload", 0.41)]
R_IMMUT = [("audit-immutable-rules-file", 0.92), ("audit-immutable-auditctl-now", 0.80),
           ("gen-reboot-pending", 0.55)]
R_IMMUT_RETRY = [("audit-immutable-rules-file", 0.92), ("audit-immutable-auditctl-now", 0.80),
                 ("gen-reboot-pending", 0.55), ("gen-verify-effective", 0.50)]
R_PRIV = [("audit-priv-sudo-rule", 0.90), ("audit-priv-find-setuid", 0.76), ("gen-verify-effective", 0.50)]
R_TIME = [("audit-time-both-arches", 0.88), ("audit-time-combine-syscalls", 0.74),
          ("audit-priv-sudo-rule", 0.41)]
R_GRUB = [("grub-audit-grubby", 0.89), ("grub-audit-edit-grubcfg", 0.77), ("gen-backup-before-edit", 0.45)]
R_FW = [("firewalld-allow-ssh-before-drop", 0.87), ("firewalld-edit-conf-drop", 0.80),
        ("gen-service-reload", 0.44)]
R_SUDO = [("sudo-nopasswd-visudo-copy", 0.86), ("sudo-nopasswd-delete-lines", 0.82),
          ("gen-backup-before-edit", 0.50)]
R_AIDE = [("aide-init-move-db", 0.88), ("aide-exclude-volatile", 0.64), ("gen-dnf-timeout", 0.50)]
R_AIDECRON = [("aide-cron-daily-entry", 0.87), ("aide-systemd-timer", 0.79), ("gen-idempotent-edit", 0.42)]
R_REDIR = [("sysctl-dropin-scan-conflicts", 0.90), ("sysctl-runtime-write", 0.71),
           ("gen-verify-effective", 0.50)]
R_DMESG = [("sysctl-dmesg-restrict-value", 0.88), ("sysctl-apply-system", 0.70),
           ("sysctl-dropin-scan-conflicts", 0.66)]
R_KMOD = [("kmod-install-false-blacklist", 0.90), ("kmod-unload-now", 0.62), ("gen-dropin-over-main", 0.50)]
R_TMP = [("tmp-fstab-entry", 0.86), ("tmp-restart-mount-unit", 0.80), ("tmp-remount-live", 0.72),
         ("gen-backup-before-edit", 0.45)]
R_TELNET = [("pkg-telnet-remove-verify", 0.91), ("pkg-remove-check-deps", 0.60), ("gen-dnf-timeout", 0.52)]
R_KDUMP = [("kdump-disable-mask", 0.90), ("kdump-remove-crashkernel", 0.68), ("gen-verify-effective", 0.45)]
R_SSHBANNER = [("sshd-banner-issue-dropin", 0.90), ("banner-issue-heredoc", 0.64), ("gen-sshd-validate", 0.55),
               ("gen-sshd-restart-skip-check", 0.50)]
R_ISSUE = [("banner-issue-heredoc", 0.89), ("banner-issue-echo-escapes", 0.77), ("gen-backup-before-edit", 0.47)]
R_SELINUX = [("selinux-enforcing-config", 0.90), ("selinux-autorelabel", 0.70), ("gen-backup-before-edit", 0.47),
             ("gen-reboot-pending", 0.44)]

# The witness labels. Run-6 ignored every tip; run-7 followed every tip.
MACS_IGNORED = {
    "sshd-macs-cp-1": N("overwrites ssh_config; no update-crypto-policies"),
    "sshd-macs-cp-3": N("overwrites /etc/ssh/ssh_config with a MACs line"),
    "sshd-macs-cp-2": N("no sub-policy module; MACs set in ssh_config"),
    "sshd-macs-cp-4": N("no policy change; verifies with ssh -G only"),
    "sshd-macs-cp-5": N("hand-written MACs in ssh_config; no policy"),
}


def macs_followed(attempt: int) -> dict:
    base = "DEFAULT:STIG-MACS" if attempt == 1 else "FIPS:STIG-MACS"
    return {
        "sshd-macs-cp-1": Y(f"sets {base} via update-crypto-policies; ssh_config untouched"),
        "sshd-macs-cp-3": Y("leaves /etc/ssh/ssh_config without MACs lines"),
        "sshd-macs-cp-2": Y(f"writes STIG-MACS.pmod and applies {base}"),
        "sshd-macs-cp-4": Y("checks --show and back-end MACs; restarts sshd"),
        "sshd-macs-cp-5": Y("(re)applies policy and restarts sshd; no hand edit"),
    }


MACS_DETAIL = ("ssh -G localhost: macs hmac-sha2-256-etm@openssh.com,hmac-sha1-etm@openssh.com,"
               "umac-128-etm@openssh.com,hmac-sha2-256,hmac-sha1 - first value comes from "
               "/etc/ssh/ssh_config.d/01-legacy-jumphost.conf (pulled in by 'Include "
               "/etc/ssh/ssh_config.d/*.conf'); crypto-policies back-end lists SHA-2 only but is read later")

RUN6 = [
    (WITNESS, [
        att(R_MACS, S_MACS_6_1, MACS_IGNORED, PASS,
            detail=("ssh -G localhost: macs hmac-sha2-512-etm@openssh.com,hmac-sha2-256-etm@openssh.com,"
                    "hmac-sha2-512,hmac-sha2-256 - only FIPS-approved MACs offered")),
    ]),
    ("configure_crypto_policy", [
        att(R_CP, S_CP_6_1, {
            "crypto-policy-set-fips": Y("update-crypto-policies --set FIPS, checks --show"),
            "crypto-policy-fips-mode-setup": N("leaves kernel FIPS mode unchanged"),
            "crypto-policy-backend-symlinks": Y("removes non-symlink back-end overrides first"),
            "sshd-macs-cp-1": Y("same command (--set FIPS), no ssh_config edit"),
        }, PASS),
    ]),
    ("sshd_disable_root_login", [
        att(R_ROOT, S_ROOT_6_1, {
            "sshd-root-dropin-first": Y("PermitRootLogin no in 00-stig.conf"),
            "sshd-root-match-exception": N("no Match block for the bastion"),
            "gen-sshd-validate": Y("sshd -t before reload, rollback on failure"),
            "gen-sshd-restart-skip-check": N("validates and reloads instead"),
        }, PASS),
    ]),
    ("sshd_set_max_auth_tries", [
        att(R_MAXAUTH, S_MAXAUTH_6_1, {
            "sshd-maxauth-dropin": Y("MaxAuthTries 4 in early drop-in; checks sshd -T"),
            "sshd-maxauth-client-identities": N("no client-side IdentitiesOnly"),
            "gen-sshd-validate": Y("sshd -t before reload"),
            "gen-idempotent-edit": N("overwrites the whole drop-in with printf"),
        }, PASS),
    ]),
    ("sshd_set_idle_timeout", [
        att(R_IDLE, S_IDLE_6_1, {
            "sshd-idle-interval-600": Y("Interval 600 and CountMax 1"),
            "sshd-idle-countmax-zero": N("uses CountMax 1, not 0"),
            "sshd-idle-effective-value": Y("compares sshd -T output, greps other drop-ins"),
            "gen-sshd-validate": Y("sshd -t before reload"),
        }, PASS),
    ]),
    ("sshd_disable_x11_forwarding", [
        att(R_X11, S_X11_6_1, {
            "sshd-x11-inplace": Y("changes the shipped line in sshd_config in place"),
            "sshd-x11-remove-xauth": N("xauth package left installed"),
            "gen-dropin-over-main": N("edits the main sshd_config"),
            "gen-service-reload": Y("systemctl reload sshd"),
        }, PASS),
    ]),
    ("accounts_passwords_pam_faillock_deny", [
        att(R_FAILLOCK, S_FAILLOCK_6_1, {
            "faillock-authselect-feature": Y("enable-feature with-faillock; deny = 3 in faillock.conf"),
            "faillock-first-auth-line": N("no hand-inserted authfail line"),
            "gen-authselect-no-hand-edit": Y("PAM changed only through authselect"),
            "gen-backup-before-edit": Y("timestamped backups of conf and PAM files"),
        }, PASS),
    ]),
    ("accounts_passwords_pam_faillock_deny_root", [
        att(R_DENYROOT, S_DENYROOT_6_1, {
            "faillock-root-even-deny-conf": Y("even_deny_root in faillock.conf, with-faillock on"),
            "faillock-root-selftest": N("no deliberate failed logins"),
            "faillock-root-reset-tally": Y("faillock --user root --reset"),
            "gen-verify-effective": Y("checks authselect current and root's tally"),
        }, PASS),
    ]),
    ("accounts_password_pam_minlen", [
        att(R_MINLEN, S_MINLEN_6_1, {
            "pwquality-minlen-conf": Y("minlen = 15 in pwquality.conf"),
            "pwquality-minlen-pam-args": N("no minlen= on the PAM line"),
            "gen-dropin-over-main": N("edits main pwquality.conf"),
            "gen-authselect-no-hand-edit": N("not applicable: no PAM change"),
        }, PASS),
    ]),
    ("accounts_password_pam_ucredit", [
        att(R_UCREDIT, S_UCREDIT_6_1, {
            "pwquality-credit-negative": Y("ucredit = -1"),
            "pwquality-credit-all-classes": N("sets ucredit only"),
            "pwquality-minlen-conf": N("does not touch minlen"),
            "gen-dropin-over-main": N("edits main pwquality.conf"),
        }, PASS),
    ]),
    ("auditd_data_retention_space_left_action", [
        att(R_SPACE, S_SPACE_6_1, {
            "auditd-space-left-action-email": Y("email + root, service auditd restart"),
            "auditd-space-left-percent": N("space_left not changed"),
            "gen-backup-before-edit": Y("backs up auditd.conf"),
            "gen-service-reload": N("restarts auditd, no reload"),
        }, PASS),
    ]),
    ("audit_rules_immutable", [
        att(R_IMMUT, S_IMMUT_6_1, {
            "audit-immutable-rules-file": Y("-e 2 alone in 99-finalize.rules"),
            "audit-immutable-auditctl-now": Y("loads -e 2 at once via augenrules --load"),
            "gen-reboot-pending": N("forces immutability at runtime"),
        }, GAP, detail=("audit rules immutable (auditctl -s: enabled 2): evaluator could not load its "
                        "probe rule set ('Error sending add rule request (Operation not permitted)'); "
                        "result undetermined")),
        att(R_IMMUT_RETRY, S_IMMUT_6_2, {
            "audit-immutable-rules-file": Y("-e 2 in last-sorting 99-finalize.rules"),
            "audit-immutable-auditctl-now": N("deliberately does not load -e 2 now"),
            "gen-reboot-pending": Y("writes persistent file, verifies file only"),
            "gen-verify-effective": N("checks audit.rules file, not auditctl state"),
        }, PASS),
    ]),
    ("audit_rules_privileged_commands_sudo", [
        att(R_PRIV, S_PRIV_6_1, {
            "audit-priv-sudo-rule": Y("exact sudo rule in own rules.d file"),
            "audit-priv-find-setuid": N("only the sudo rule, no find"),
            "gen-verify-effective": Y("checks auditctl -l after load"),
        }, PASS),
    ]),
    ("audit_rules_time_adjtimex", [
        att(R_TIME, S_TIME_6_1, {
            "audit-time-both-arches": N("b64 rule only"),
            "audit-time-combine-syscalls": N("adjtimex only"),
            "audit-priv-sudo-rule": N("sudo path rule, unrelated"),
        }, CLEAN, detail="no audit rule for adjtimex with arch=b32 (found b64 only)"),
        att(R_TIME, S_TIME_6_2, {
            "audit-time-both-arches": Y("b32 and b64 adjtimex rules"),
            "audit-time-combine-syscalls": N("one syscall per rule"),
            "audit-priv-sudo-rule": N("sudo path rule, unrelated"),
        }, PASS),
    ]),
    ("grub2_audit_argument", [
        att(R_GRUB, S_GRUB_6_1, {
            "grub-audit-grubby": Y("grubby --args=audit=1 plus GRUB_CMDLINE_LINUX"),
            "grub-audit-edit-grubcfg": N("grub.cfg not edited"),
            "gen-backup-before-edit": Y("backs up /etc/default/grub"),
        }, PASS),
    ]),
    ("set_firewalld_default_zone", [
        att(R_FW, S_FW_6_1, {
            "firewalld-allow-ssh-before-drop": N("switches first; ssh only --permanent, no reload"),
            "firewalld-edit-conf-drop": N("uses --set-default-zone, not the conf file"),
            "gen-service-reload": N("no firewall-cmd --reload"),
        }, HEALTH, extra=90,
            detail=("health probe: new SSH connection to 22/tcp timed out; runtime drop zone has no ssh "
                    "service (ssh added to the permanent config only); host unreachable for evaluation")),
        att(R_FW, S_FW_6_2, {
            "firewalld-allow-ssh-before-drop": Y("ssh permanent + reload before --set-default-zone"),
            "firewalld-edit-conf-drop": N("never edits firewalld.conf directly"),
            "gen-service-reload": Y("firewall-cmd --reload"),
        }, PASS),
    ]),
    ("sudo_remove_nopasswd", [
        att(R_SUDO, S_SUDO_6_1, {
            "sudo-nopasswd-visudo-copy": Y("edits a copy, visudo -cf, then installs"),
            "sudo-nopasswd-delete-lines": N("strips the tag, keeps the rules"),
            "gen-backup-before-edit": Y("backs up sudoers tree to /root"),
        }, PASS),
    ]),
    ("aide_build_database", [
        att(R_AIDE, S_AIDE_6_1, {
            "aide-init-move-db": N("never moves aide.db.new.gz"),
            "aide-exclude-volatile": N("no exclusions"),
            "gen-dnf-timeout": N("plain dnf install, no rpm -q or timeout"),
        }, CLEAN, extra=260,
            detail="AIDE database /var/lib/aide/aide.db.gz not found (only aide.db.new.gz present)"),
        att(R_AIDE, S_AIDE_6_2, {
            "aide-init-move-db": Y("mv aide.db.new.gz to aide.db.gz"),
            "aide-exclude-volatile": N("no exclusions"),
            "gen-dnf-timeout": Y("rpm -q first, dnf with timeout"),
        }, PASS, extra=290),
    ]),
    ("aide_periodic_cron_checking", [
        att(R_AIDECRON, S_AIDECRON_6_1, {
            "aide-cron-daily-entry": Y("daily aide --check in /etc/cron.d"),
            "aide-systemd-timer": N("no systemd timer"),
            "gen-idempotent-edit": N("writes whole cron file"),
        }, PASS),
    ]),
    ("sysctl_net_ipv4_conf_all_accept_redirects", [
        att(R_REDIR, S_REDIR_6_1, {
            "sysctl-dropin-scan-conflicts": N("edits sysctl.conf, no scan for conflicts"),
            "sysctl-runtime-write": N("applies with sysctl -p, not -w"),
            "gen-verify-effective": Y("checks sysctl -n"),
        }, CLEAN, detail=("/etc/sysctl.d/60-router-tuning.conf:3 sets net.ipv4.conf.all.accept_redirects "
                          "= 1 (overrides /etc/sysctl.conf at boot)")),
        att(R_REDIR, S_REDIR_6_2, {
            "sysctl-dropin-scan-conflicts": Y("99-stig.conf + comments out conflicts everywhere"),
            "sysctl-runtime-write": N("applies with sysctl --system, no -w"),
            "gen-verify-effective": Y("checks sysctl -n and all files"),
        }, PASS),
    ]),
    ("sysctl_kernel_dmesg_restrict", [
        att(R_DMESG, S_DMESG_6_1, {
            "sysctl-dmesg-restrict-value": Y("kernel.dmesg_restrict = 1 in sysctl.d"),
            "sysctl-apply-system": N("uses sysctl -p FILE"),
            "sysctl-dropin-scan-conflicts": N("no scan for conflicting files"),
        }, PASS),
    ]),
    ("kernel_module_usb-storage_disabled", [
        att(R_KMOD, S_KMOD_6_1, {
            "kmod-install-false-blacklist": N("blacklist only, no install line"),
            "kmod-unload-now": N("no modprobe -r"),
            "gen-dropin-over-main": Y("writes a modprobe.d file"),
        }, CLEAN, detail="no 'install usb-storage /bin/false' in /etc/modprobe.d/*.conf"),
        att(R_KMOD, S_KMOD_6_2, {
            "kmod-install-false-blacklist": N("install ... /bin/true, not /bin/false"),
            "kmod-unload-now": N("no modprobe -r"),
            "gen-dropin-over-main": Y("dedicated usb-storage.conf"),
        }, CLEAN, detail="found 'install usb-storage /bin/true'; expected 'install usb-storage /bin/false'"),
        att(R_KMOD, S_KMOD_6_3, {
            "kmod-install-false-blacklist": Y("install /bin/false and blacklist"),
            "kmod-unload-now": Y("modprobe -r when loaded"),
            "gen-dropin-over-main": Y("dedicated usb-storage.conf"),
        }, PASS),
    ]),
    ("mount_option_tmp_noexec", [
        att(R_TMP, S_TMP_6_1, {
            "tmp-fstab-entry": N("no fstab entry"),
            "tmp-restart-mount-unit": N("no unit drop-in or restart"),
            "tmp-remount-live": Y("mount -o remount,...,noexec /tmp"),
            "gen-backup-before-edit": N("edits no file, no backup"),
        }, CLEAN, detail="/etc/fstab has no entry for /tmp (runtime /tmp is noexec)"),
        att(R_TMP, S_TMP_6_2, {
            "tmp-fstab-entry": N("no fstab entry"),
            "tmp-restart-mount-unit": Y("tmp.mount.d drop-in + restart tmp.mount"),
            "tmp-remount-live": N("restarts the unit instead of remount"),
            "gen-backup-before-edit": N("new drop-in only, no backup"),
        }, CLEAN, detail=("fix script exited 1: 'systemctl restart tmp.mount' failed (umount: /tmp: target "
                          "is busy); /etc/fstab has no entry for /tmp")),
        att(R_TMP, S_TMP_6_3, {
            "tmp-fstab-entry": Y("tmpfs /tmp line with noexec in fstab"),
            "tmp-restart-mount-unit": N("no unit restart"),
            "tmp-remount-live": N("no remount; runtime unchanged"),
            "gen-backup-before-edit": Y("backs up /etc/fstab"),
        }, CLEAN, detail="/etc/fstab entry OK, but /tmp is mounted rw,nosuid,nodev (no noexec)"),
        att(R_TMP, S_TMP_6_4, {
            "tmp-fstab-entry": Y("fstab entry with noexec"),
            "tmp-restart-mount-unit": N("explicitly avoids restarting tmp.mount"),
            "tmp-remount-live": Y("mount -o remount,nodev,nosuid,noexec /tmp"),
            "gen-backup-before-edit": Y("backs up /etc/fstab"),
        }, PASS),
    ]),
    ("package_telnet-server_removed", [
        att(R_TELNET, S_TELNET_6_1, {
            "pkg-telnet-remove-verify": Y("disables socket, dnf remove, rpm -q check"),
            "pkg-remove-check-deps": N("no --assumeno dry run"),
            "gen-dnf-timeout": N("removal; no timeout option"),
        }, PASS),
    ]),
    ("sshd_enable_warning_banner", [
        att(R_SSHBANNER, S_SSHBANNER_6_1, {
            "sshd-banner-issue-dropin": N("Banner /etc/issue.net, not /etc/issue"),
            "banner-issue-heredoc": N("banner text not written"),
            "gen-sshd-validate": Y("sshd -t before reload"),
            "gen-sshd-restart-skip-check": N("validates and reloads"),
        }, CLEAN, detail="sshd -T: banner /etc/issue.net; expected /etc/issue"),
        att(R_SSHBANNER, S_SSHBANNER_6_2, {
            "sshd-banner-issue-dropin": Y("Banner /etc/issue in 00-stig.conf"),
            "banner-issue-heredoc": N("banner text not written"),
            "gen-sshd-validate": Y("sshd -t before reload"),
            "gen-sshd-restart-skip-check": N("validates and reloads"),
        }, PASS),
    ]),
    ("banner_etc_issue", [
        att(R_ISSUE, S_ISSUE_6_1, {
            "banner-issue-heredoc": N("short banner via printf"),
            "banner-issue-echo-escapes": N("printf of a one-line text, no echo -e"),
            "gen-backup-before-edit": Y("backs up /etc/issue"),
        }, CLEAN, detail="/etc/issue does not contain the required DoD notice (short-form banner found)"),
        att(R_ISSUE, S_ISSUE_6_2, {
            "banner-issue-heredoc": Y("full notice via quoted heredoc"),
            "banner-issue-echo-escapes": N("heredoc, no echo -e"),
            "gen-backup-before-edit": Y("backs up /etc/issue"),
        }, PASS),
    ]),
]

RUN7 = [
    (WITNESS, [
        att(R_MACS, S_MACS_7_1, macs_followed(1), CLEAN, detail=MACS_DETAIL),
        att(R_MACS, S_MACS_7_2, macs_followed(2), CLEAN, detail=MACS_DETAIL),
        att(R_MACS, S_MACS_7_3, macs_followed(3), CLEAN, detail=MACS_DETAIL),
    ]),
    ("configure_crypto_policy", [
        att(R_CP, S_CP_7_1, {
            "crypto-policy-set-fips": Y("update-crypto-policies --set FIPS"),
            "crypto-policy-fips-mode-setup": Y("runs fips-mode-setup --enable"),
            "crypto-policy-backend-symlinks": Y("removes regular-file back-end overrides"),
            "sshd-macs-cp-1": Y("same command (--set FIPS), no ssh_config edit"),
        }, GAP, extra=40,
            detail=("FIPS mode change pending reboot: fips-mode-setup --check reports 'enabled, not yet "
                    "active', /proc/sys/crypto/fips_enabled = 0; evaluator cannot judge policy/kernel "
                    "consistency before reboot")),
        att(R_CP_RETRY, S_CP_7_2, {
            "crypto-policy-set-fips": Y("update-crypto-policies --set FIPS, checks --show"),
            "crypto-policy-fips-mode-setup": N("deliberately skips fips-mode-setup"),
            "crypto-policy-backend-symlinks": Y("removes overrides, checks symlinks"),
            "gen-reboot-pending": Y("leaves FIPS mode to reboot; verifies persistent state"),
            "sshd-macs-cp-1": Y("same command (--set FIPS), no ssh_config edit"),
        }, PASS),
    ]),
    ("sshd_disable_root_login", [
        att(R_ROOT, S_ROOT_7_1, {
            "sshd-root-dropin-first": Y("PermitRootLogin no in 00-stig.conf"),
            "sshd-root-match-exception": Y("ends drop-in with Match Address block"),
            "gen-sshd-validate": N("no sshd -t before restart"),
            "gen-sshd-restart-skip-check": Y("plain restart, relies on the unit"),
        }, HEALTH, extra=90,
            detail=("health probe: sshd.service failed to start - /etc/ssh/sshd_config.d/50-redhat.conf "
                    "line 15: Directive 'UsePAM' is not allowed within a Match block; no SSH on 22/tcp")),
        att(R_ROOT, S_ROOT_7_2, {
            "sshd-root-dropin-first": Y("PermitRootLogin no in 00-stig.conf"),
            "sshd-root-match-exception": N("refuses Match blocks"),
            "gen-sshd-validate": Y("sshd -t before restart, restore on failure"),
            "gen-sshd-restart-skip-check": N("validates before restarting"),
        }, PASS),
    ]),
    ("sshd_set_max_auth_tries", [
        att(R_MAXAUTH, S_MAXAUTH_7_1, {
            "sshd-maxauth-dropin": Y("MaxAuthTries 4 in 00-stig.conf; checks sshd -T"),
            "sshd-maxauth-client-identities": Y("IdentitiesOnly yes for mgmt hosts"),
            "gen-sshd-validate": Y("sshd -t before reload"),
            "gen-idempotent-edit": Y("grep -q / anchored sed helper"),
        }, PASS),
    ]),
    ("sshd_set_idle_timeout", [
        att(R_IDLE, S_IDLE_7_1, {
            "sshd-idle-interval-600": N("Interval 600 but CountMax 0, contrary to tip"),
            "sshd-idle-countmax-zero": Y("ClientAliveCountMax 0"),
            "sshd-idle-effective-value": Y("reads values back from sshd -T"),
            "gen-sshd-validate": Y("sshd -t before reload"),
        }, CLEAN, detail="sshd -T: clientalivecountmax 0; expected 1"),
        att(R_IDLE, S_IDLE_7_2, {
            "sshd-idle-interval-600": Y("Interval 600 and CountMax 1"),
            "sshd-idle-countmax-zero": N("CountMax 1, not 0"),
            "sshd-idle-effective-value": Y("reads values back from sshd -T"),
            "gen-sshd-validate": Y("sshd -t before reload"),
        }, PASS),
    ]),
    ("sshd_disable_x11_forwarding", [
        att(R_X11, S_X11_7_1, {
            "sshd-x11-inplace": Y("changes shipped line in sshd_config in place"),
            "sshd-x11-remove-xauth": Y("dnf remove xorg-x11-xauth"),
            "gen-dropin-over-main": Y("also sets it in 00-stig.conf"),
            "gen-service-reload": Y("systemctl reload sshd"),
        }, PASS),
    ]),
    ("accounts_passwords_pam_faillock_deny", [
        att(R_FAILLOCK, S_FAILLOCK_7_1, {
            "faillock-authselect-feature": N("hand edit, no authselect feature"),
            "faillock-first-auth-line": Y("inserts authfail line as first auth line"),
            "gen-authselect-no-hand-edit": N("sed on authselect-generated PAM files"),
            "gen-backup-before-edit": Y("backs up both PAM files"),
        }, HEALTH, extra=90,
            detail=("health probe: root console login refused - pam_faillock authfail ran before "
                    "pam_unix and recorded every attempt as a failure; root locked (unlock_time=0)")),
        att(R_FAILLOCK_RETRY, S_FAILLOCK_7_2, {
            "faillock-authselect-feature": Y("with-faillock feature + deny = 3 in faillock.conf"),
            "faillock-first-auth-line": N("no hand-inserted line; checks first auth line"),
            "gen-authselect-no-hand-edit": Y("PAM only through authselect"),
            "faillock-authselect-check": Y("authselect check, re-select --force on drift"),
        }, PASS),
    ]),
    ("accounts_passwords_pam_faillock_deny_root", [
        att(R_DENYROOT, S_DENYROOT_7_1, {
            "faillock-root-even-deny-conf": Y("even_deny_root in faillock.conf"),
            "faillock-root-selftest": Y("three wrong root passwords via pamtester"),
            "faillock-root-reset-tally": N("never resets root's tally"),
            "gen-verify-effective": Y("reads faillock --user root"),
        }, HEALTH, extra=90,
            detail=("health probe: root console login denied - faillock shows 3 failures for root, "
                    "even_deny_root with unlock_time=0 keeps root locked")),
        att(R_DENYROOT, S_DENYROOT_7_2, {
            "faillock-root-even-deny-conf": Y("even_deny_root in faillock.conf"),
            "faillock-root-selftest": N("explicitly no test lockout"),
            "faillock-root-reset-tally": Y("faillock --user root --reset"),
            "gen-verify-effective": Y("checks feature and root's tally"),
        }, PASS),
    ]),
    ("accounts_password_pam_minlen", [
        att(R_MINLEN, S_MINLEN_7_1, {
            "pwquality-minlen-conf": N("pwquality.conf not touched"),
            "pwquality-minlen-pam-args": Y("minlen=15 on pam_pwquality lines"),
            "gen-dropin-over-main": N("no drop-in"),
            "gen-authselect-no-hand-edit": N("hand-edits system-auth/password-auth"),
        }, CLEAN, detail=("minlen not set in /etc/security/pwquality.conf or pwquality.conf.d (effective "
                          "default 8); PAM module arguments are not part of the check")),
        att(R_MINLEN, S_MINLEN_7_2, {
            "pwquality-minlen-conf": Y("minlen = 15 in pwquality.conf.d"),
            "pwquality-minlen-pam-args": N("no PAM argument"),
            "gen-dropin-over-main": Y("50-stig-minlen.conf drop-in"),
            "gen-authselect-no-hand-edit": N("not applicable: no PAM change"),
        }, PASS),
    ]),
    ("accounts_password_pam_ucredit", [
        att(R_UCREDIT, S_UCREDIT_7_1, {
            "pwquality-credit-negative": Y("ucredit = -1"),
            "pwquality-credit-all-classes": Y("u/l/d/ocredit = -1 in one drop-in"),
            "pwquality-minlen-conf": N("does not set minlen; same location only"),
            "gen-dropin-over-main": Y("pwquality.conf.d drop-in"),
        }, PASS),
    ]),
    ("auditd_data_retention_space_left_action", [
        att(R_SPACE, S_SPACE_7_1, {
            "auditd-space-left-action-email": Y("email + root, service auditd restart"),
            "auditd-space-left-percent": Y("space_left = 25%"),
            "gen-backup-before-edit": Y("backs up auditd.conf"),
            "gen-service-reload": N("restarts auditd, no reload"),
        }, PASS),
    ]),
    ("audit_rules_immutable", [
        att(R_IMMUT, S_IMMUT_7_1, {
            "audit-immutable-rules-file": N("no rules.d file"),
            "audit-immutable-auditctl-now": Y("auditctl -e 2"),
            "gen-reboot-pending": N("forces immutability at runtime only"),
        }, CLEAN, detail=("no '-e 2' in /etc/audit/rules.d/*.rules; running state enabled=2 does not "
                          "survive a reboot")),
        att(R_IMMUT_RETRY, S_IMMUT_7_2, {
            "audit-immutable-rules-file": Y("-e 2 in 99-finalize.rules"),
            "audit-immutable-auditctl-now": Y("loads -e 2 at once via augenrules --load"),
            "gen-reboot-pending": N("forces immutability at runtime"),
            "gen-verify-effective": Y("checks auditctl -s enabled 2"),
        }, GAP, detail=("audit rules immutable (auditctl -s: enabled 2): evaluator could not load its "
                        "probe rule set; result undetermined")),
        att(R_IMMUT_RETRY, S_IMMUT_7_3, {
            "audit-immutable-rules-file": Y("-e 2 in last-sorting 99-finalize.rules"),
            "audit-immutable-auditctl-now": N("deliberately not loaded"),
            "gen-reboot-pending": Y("boot-time setting, file verified only"),
            "gen-verify-effective": N("verifies audit.rules file, not auditctl"),
        }, PASS),
    ]),
    ("audit_rules_privileged_commands_sudo", [
        att(R_PRIV, S_PRIV_7_1, {
            "audit-priv-sudo-rule": Y("same rule format incl. sudo, key privileged"),
            "audit-priv-find-setuid": Y("generates rules via find -perm /6000"),
            "gen-verify-effective": Y("auditctl -l counts and spot checks"),
        }, PASS, extra=30),
    ]),
    ("audit_rules_time_adjtimex", [
        att(R_TIME, S_TIME_7_1, {
            "audit-time-both-arches": Y("b32 and b64 rules"),
            "audit-time-combine-syscalls": Y("adjtimex+settimeofday+clock_settime per arch"),
            "audit-priv-sudo-rule": N("sudo path rule, unrelated"),
        }, PASS),
    ]),
    ("grub2_audit_argument", [
        att(R_GRUB, S_GRUB_7_1, {
            "grub-audit-grubby": N("no grubby, no /etc/default/grub"),
            "grub-audit-edit-grubcfg": Y("sed on linux lines in grub.cfg"),
            "gen-backup-before-edit": Y("backs up grub.cfg"),
        }, CLEAN, detail=("fix script exited 1; grub.cfg only calls blscfg (no linux lines); "
                          "/boot/loader/entries/*.conf options lack audit=1")),
        att(R_GRUB, S_GRUB_7_2, {
            "grub-audit-grubby": Y("grubby --args=audit=1 plus GRUB_CMDLINE_LINUX"),
            "grub-audit-edit-grubcfg": N("grub.cfg not edited"),
            "gen-backup-before-edit": Y("backs up /etc/default/grub"),
        }, PASS),
    ]),
    ("set_firewalld_default_zone", [
        att(R_FW, S_FW_7_1, {
            "firewalld-allow-ssh-before-drop": N("no ssh rule for the drop zone"),
            "firewalld-edit-conf-drop": Y("DefaultZone=drop in firewalld.conf + reload"),
            "gen-service-reload": Y("firewall-cmd --reload"),
        }, HEALTH, extra=90,
            detail=("health probe: new SSH connections to 22/tcp dropped (default zone drop without ssh); "
                    "evaluator lost access to the host")),
        att(R_FW, S_FW_7_2, {
            "firewalld-allow-ssh-before-drop": Y("ssh permanent + reload, then switch"),
            "firewalld-edit-conf-drop": N("uses --set-default-zone; conf only checked"),
            "gen-service-reload": Y("firewall-cmd --reload"),
        }, PASS),
    ]),
    ("sudo_remove_nopasswd", [
        att(R_SUDO, S_SUDO_7_1, {
            "sudo-nopasswd-visudo-copy": Y("edits a temp copy, visudo -cf before install"),
            "sudo-nopasswd-delete-lines": Y("sed '/NOPASSWD/d'"),
            "gen-backup-before-edit": Y("copies sudoers tree to /root"),
        }, HEALTH, extra=60,
            detail=("health probe: 'sudo -l -U stigadm' - User stigadm is not allowed to run sudo "
                    "(its only rule in /etc/sudoers.d/20-stigadm was deleted)")),
        att(R_SUDO, S_SUDO_7_2, {
            "sudo-nopasswd-visudo-copy": Y("edits a copy, visudo -cf, then installs"),
            "sudo-nopasswd-delete-lines": N("keeps the rules, strips only the tag"),
            "gen-backup-before-edit": Y("copies sudoers tree to /root"),
        }, PASS),
    ]),
    ("aide_build_database", [
        att(R_AIDE, S_AIDE_7_1, {
            "aide-init-move-db": Y("moves aide.db.new.gz to aide.db.gz"),
            "aide-exclude-volatile": Y("adds exclusions for journal, sss db, ..."),
            "gen-dnf-timeout": Y("rpm -q first, dnf --setopt=timeout=30"),
        }, PASS, extra=250),
    ]),
    ("aide_periodic_cron_checking", [
        att(R_AIDECRON, S_AIDECRON_7_1, {
            "aide-cron-daily-entry": Y("cron.d entry for aide --check"),
            "aide-systemd-timer": Y("adds aidecheck.service/.timer"),
            "gen-idempotent-edit": N("writes whole files"),
        }, PASS),
    ]),
    ("sysctl_net_ipv4_conf_all_accept_redirects", [
        att(R_REDIR, S_REDIR_7_1, {
            "sysctl-dropin-scan-conflicts": Y("99-stig.conf + disables conflicts in all dirs"),
            "sysctl-runtime-write": Y("sysctl -w before --system"),
            "gen-verify-effective": Y("checks sysctl -n and all files"),
        }, PASS),
    ]),
    ("sysctl_kernel_dmesg_restrict", [
        att(R_DMESG, S_DMESG_7_1, {
            "sysctl-dmesg-restrict-value": Y("kernel.dmesg_restrict = 1 in sysctl.d"),
            "sysctl-apply-system": Y("sysctl --system"),
            "sysctl-dropin-scan-conflicts": Y("greps all sysctl dirs for conflicts"),
        }, PASS),
    ]),
    ("kernel_module_usb-storage_disabled", [
        att(R_KMOD, S_KMOD_7_1, {
            "kmod-install-false-blacklist": Y("install /bin/false and blacklist"),
            "kmod-unload-now": Y("modprobe -r when loaded"),
            "gen-dropin-over-main": Y("dedicated usb-storage.conf"),
        }, PASS),
    ]),
    ("mount_option_tmp_noexec", [
        att(R_TMP, S_TMP_7_1, {
            "tmp-fstab-entry": Y("tmpfs /tmp line with noexec in fstab"),
            "tmp-restart-mount-unit": Y("tmp.mount.d/options.conf + restart tmp.mount"),
            "tmp-remount-live": N("restarts the unit instead of remount"),
            "gen-backup-before-edit": Y("backs up /etc/fstab"),
        }, CLEAN, detail=("fix script exited 1: 'systemctl restart tmp.mount' failed (umount: /tmp: target "
                          "is busy); /etc/fstab OK but /tmp still mounted without noexec")),
        att(R_TMP, S_TMP_7_2, {
            "tmp-fstab-entry": Y("fstab entry with noexec"),
            "tmp-restart-mount-unit": N("no unit restart"),
            "tmp-remount-live": Y("mount -o remount,nodev,nosuid,noexec /tmp"),
            "gen-backup-before-edit": Y("backs up /etc/fstab"),
        }, PASS),
    ]),
    ("service_kdump_disabled", [
        att(R_KDUMP, S_KDUMP_7_1, {
            "kdump-disable-mask": Y("disable --now and mask"),
            "kdump-remove-crashkernel": Y("grubby --remove-args=crashkernel"),
            "gen-verify-effective": Y("checks is-enabled/is-active"),
        }, PASS),
    ]),
    ("sshd_enable_warning_banner", [
        att(R_SSHBANNER, S_SSHBANNER_7_1, {
            "sshd-banner-issue-dropin": Y("Banner /etc/issue in 00-stig.conf"),
            "banner-issue-heredoc": N("banner text not written"),
            "gen-sshd-validate": N("restarts without sshd -t"),
            "gen-sshd-restart-skip-check": Y("plain restart, relies on the unit"),
        }, PASS),
    ]),
    ("banner_etc_issue", [
        att(R_ISSUE, S_ISSUE_7_1, {
            "banner-issue-heredoc": Y("full notice via quoted heredoc"),
            "banner-issue-echo-escapes": N("heredoc, no echo -e"),
            "gen-backup-before-edit": Y("backs up /etc/issue"),
        }, PASS),
    ]),
    ("selinux_state", [
        att(R_SELINUX, S_SELINUX_7_1, {
            "selinux-enforcing-config": Y("SELINUX=enforcing + setenforce 1"),
            "selinux-autorelabel": Y("touch /.autorelabel"),
            "gen-backup-before-edit": Y("backs up /etc/selinux/config"),
            "gen-reboot-pending": N("switches mode at runtime with setenforce"),
        }, PASS),
    ]),
]

# ---------------------------------------------------------------------------
# Tip groups, as designed (the README and the lead's demo narrative use
# them). build() checks each claim against the data.
# ---------------------------------------------------------------------------

TIP_GROUPS = {
    "witness": {
        "title": "The ADR witness: plausible but wrong for this host",
        "tips": ["sshd-macs-cp-1", "sshd-macs-cp-2", "sshd-macs-cp-3", "sshd-macs-cp-4", "sshd-macs-cp-5"],
        "text": ("Ignored in run-6 while the rule passed on attempt 1 (outcome-only credit 1.0 each); "
                 "followed literally in run-7, three clean failures in a row."),
    },
    "harmful": {
        "title": "Harmful: followed, and the fix broke the host (health_failure)",
        "tips": ["gen-sshd-restart-skip-check", "sshd-root-match-exception", "faillock-first-auth-line",
                 "faillock-root-selftest", "firewalld-edit-conf-drop", "sudo-nopasswd-delete-lines"],
        "text": ("Match block in an included sshd drop-in (sshd will not start), restart without sshd -t, "
                 "pam_faillock authfail as first auth line (every logon fails), a self-test that locks "
                 "root for good, DefaultZone=drop without ssh, deleting whole NOPASSWD sudoers lines. "
                 "gen-sshd-restart-skip-check is also followed once in a pass (sshd banner, run-7)."),
    },
    "misleading": {
        "title": "Misleading: followed, rule not compliant (clean_failure / evaluator_gap)",
        "tips": ["sshd-idle-countmax-zero", "pwquality-minlen-pam-args", "grub-audit-edit-grubcfg",
                 "audit-immutable-auditctl-now", "tmp-restart-mount-unit", "crypto-policy-fips-mode-setup"],
        "text": ("Outdated or half-true advice: CountMax 0, minlen as a PAM argument, editing grub.cfg on a "
                 "BLS host, auditctl -e 2 at runtime, restarting a busy tmp.mount, fips-mode-setup inside a "
                 "live fix."),
    },
    "helpful": {
        "title": "Helpful: followed, and the attempt passed (often the retry that fixed a bad tip)",
        "tips": ["sshd-root-dropin-first", "gen-sshd-validate", "sshd-idle-interval-600",
                 "faillock-authselect-feature", "faillock-authselect-check", "faillock-root-reset-tally",
                 "pwquality-minlen-conf", "audit-immutable-rules-file", "audit-time-both-arches",
                 "grub-audit-grubby", "firewalld-allow-ssh-before-drop", "sudo-nopasswd-visudo-copy",
                 "aide-init-move-db", "sysctl-dropin-scan-conflicts", "kmod-install-false-blacklist",
                 "tmp-fstab-entry", "tmp-remount-live", "banner-issue-heredoc", "sshd-banner-issue-dropin",
                 "crypto-policy-set-fips", "crypto-policy-backend-symlinks", "gen-reboot-pending"],
        "text": "Followed in passing attempts; where run-6 ignored them, run-6 needed extra attempts.",
    },
    "lucky": {
        "title": "Lucky neighbours: retrieved during passes, but the script did not follow them",
        "tips": ["sshd-maxauth-client-identities", "sshd-x11-remove-xauth", "pwquality-credit-all-classes",
                 "auditd-space-left-percent", "aide-systemd-timer", "pkg-remove-check-deps",
                 "banner-issue-echo-escapes", "gen-idempotent-edit", "gen-service-reload",
                 "audit-priv-find-setuid", "aide-exclude-volatile", "sysctl-runtime-write",
                 "sysctl-apply-system", "audit-time-combine-syscalls"],
        "text": ("Topically near, ignored in at least one passing attempt; outcome-only credit rewards them "
                 "anyway. Several are harmless when followed (run-7 follows some of them and still passes)."),
    },
}


# ---------------------------------------------------------------------------
# Layout: timestamps, JSONL lines, gold labels, README.
# ---------------------------------------------------------------------------

RUN_META = {
    "run-6": {"start": datetime(2026, 5, 3, 8, 30, 0, tzinfo=timezone.utc),
              "worker": "stig-worker 2026-04-28 (pre-MTP)", "sessions": RUN6},
    "run-7": {"start": datetime(2026, 5, 10, 8, 45, 0, tzinfo=timezone.utc),
              "worker": "stig-worker 2026-05-08 (post-MTP)", "sessions": RUN7},
}
HOST = "stig-lab-rhel9-03"


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def check_id(rule: str) -> str:
    return f"xccdf_org.ssgproject.content_rule_{rule}"


def tidy(script: str) -> str:
    lines = [ln.rstrip() for ln in script.strip("\n").split("\n")]
    return "\n".join(lines) + "\n"


def build_run(run_id: str) -> tuple[list[dict], list[list[str]]]:
    meta = RUN_META[run_id]
    sessions = meta["sessions"]
    t = meta["start"]
    lines: list[dict] = []
    gold: list[list[str]] = []
    seq = 0  # attempt counter within the run, drives the deterministic jitter

    lines.append({"type": "run_start", "run_id": run_id, "started_at": iso(t), "skill": "stig",
                  "host": HOST, "worker": meta["worker"],
                  "memory": {"store": "v2", "top_k": 5, "min_similarity": 0.35},
                  "rules_planned": len(sessions)})
    t += timedelta(seconds=3)
    lines.append({"type": "note", "run_id": run_id, "at": iso(t),
                  "text": ("host is reset to the baseline snapshot before every attempt; evaluator runs the "
                           "SSG check for the rule plus a health probe (sshd answers, root console login, "
                           "sudo for stigadm, network)")})

    for rule, attempts in sessions:
        for n, a in enumerate(attempts, start=1):
            seq += 1
            t += timedelta(seconds=5 + (seq * 7) % 11)
            ret = a["retrieval"]
            lines.append({"type": "retrieval", "run_id": run_id, "rule_id": rule, "attempt_number": n,
                          "retrieved_at": iso(t),
                          "tips": [{"tip_ref": ref, "similarity_score": s} for ref, s in ret]})
            t += timedelta(seconds=2 + seq % 3)
            started = t
            script = tidy(a["script"])
            dur = 25 + 2 * script.count("\n") + a["extra"] + (seq * 13) % 23
            t += timedelta(seconds=dur)
            passed, mode = a["result"]
            lines.append({"type": "attempt", "run_id": run_id, "rule_id": rule, "attempt_number": n,
                          "started_at": iso(started), "ended_at": iso(t), "fix_script": script,
                          "result": {"passed": passed, "failure_mode": mode}})
            if a["detail"]:
                t += timedelta(seconds=1)
                lines.append({"type": "eval_detail", "run_id": run_id, "rule_id": rule, "attempt_number": n,
                              "at": iso(t), "check_id": check_id(rule),
                              "result": "pass" if passed else mode, "detail": a["detail"]})
            for ref, _score in ret:
                followed, note = a["labels"][ref]
                gold.append([run_id, rule, str(n), ref, "true" if followed else "false", note])
        if run_id == "run-7" and rule == WITNESS:
            t += timedelta(seconds=2)
            lines.append({"type": "note", "run_id": run_id, "rule_id": rule, "at": iso(t),
                          "text": ("worker gives up on the rule after 3 failed attempts: every retrieved tip "
                                   "says to use the crypto policy and not to edit ssh_config, and that "
                                   "approach is exhausted")})
        if run_id == "run-6" and rule == "mount_option_tmp_noexec":
            t += timedelta(seconds=2)
            lines.append({"type": "note", "run_id": run_id, "rule_id": rule, "at": iso(t),
                          "text": "rule passed on attempt 4 (fstab entry + live remount)"})

    attempts = [ln for ln in lines if ln["type"] == "attempt"]
    rules_passed = sorted({ln["rule_id"] for ln in attempts if ln["result"]["passed"]})
    t += timedelta(seconds=6)
    lines.append({"type": "run_end", "run_id": run_id, "ended_at": iso(t), "rules_attempted": len(sessions),
                  "rules_passed": len(rules_passed), "attempts": len(attempts)})
    return lines, gold


def self_check() -> None:
    """Cross-check the hand-written data before writing anything."""
    refs = [r for r, _, _ in TIPS]
    assert len(refs) == len(set(refs)), "duplicate tip_ref"
    kebab = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
    for r in refs:
        assert kebab.match(r), r
    known = set(refs)
    for run_id, meta in RUN_META.items():
        seen = set()
        for rule, attempts in meta["sessions"]:
            assert rule not in seen, (run_id, rule)
            seen.add(rule)
            for i, a in enumerate(attempts, 1):
                ret = [r for r, _ in a["retrieval"]]
                scores = [s for _, s in a["retrieval"]]
                assert 3 <= len(ret) <= 5, (run_id, rule, i)
                assert len(set(ret)) == len(ret), (run_id, rule, i)
                assert scores == sorted(scores, reverse=True), (run_id, rule, i, "rank order")
                assert all(0.35 <= s <= 0.95 for s in scores), (run_id, rule, i)
                assert set(ret) <= known, (run_id, rule, i, set(ret) - known)
                assert set(a["labels"]) == set(ret), (run_id, rule, i, set(a["labels"]) ^ set(ret))
                passed, mode = a["result"]
                assert (passed and mode is None) or (not passed and mode in
                                                     ("clean_failure", "evaluator_gap", "health_failure"))
                if i < len(attempts):
                    assert not passed, (run_id, rule, i, "attempt after a pass")
    # group claims
    rows = []
    for run_id, meta in RUN_META.items():
        for rule, attempts in meta["sessions"]:
            for a in attempts:
                for ref, _ in a["retrieval"]:
                    rows.append((run_id, ref, a["labels"][ref][0], a["result"]))
    for ref in TIP_GROUPS["harmful"]["tips"]:
        assert any(r == ref and f and res == HEALTH for _, r, f, res in rows), ref
    for ref in TIP_GROUPS["misleading"]["tips"]:
        assert any(r == ref and f and res in (CLEAN, GAP) for _, r, f, res in rows), ref
    for ref in TIP_GROUPS["helpful"]["tips"]:
        assert any(r == ref and f and res == PASS for _, r, f, res in rows), ref
    for ref in TIP_GROUPS["lucky"]["tips"]:
        assert any(r == ref and not f and res == PASS for _, r, f, res in rows), ref


def dump_jsonl(path: Path, lines: list[dict]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for ln in lines:
            fh.write(json.dumps(ln, ensure_ascii=False) + "\n")


def stats(runs: dict[str, tuple[list[dict], list[list[str]]]]) -> dict:
    out: dict = {"runs": {}}
    all_rules = set()
    long_scripts = 0
    for run_id, (lines, gold) in runs.items():
        att_lines = [ln for ln in lines if ln["type"] == "attempt"]
        rets = [ln for ln in lines if ln["type"] == "retrieval"]
        rules = sorted({ln["rule_id"] for ln in att_lines})
        all_rules |= set(rules)
        r = {"rules": len(rules), "attempts": len(att_lines),
             "retrievals": sum(len(ln["tips"]) for ln in rets),
             "passed": sum(ln["result"]["passed"] for ln in att_lines)}
        for mode in ("clean_failure", "evaluator_gap", "health_failure"):
            r[mode] = sum(ln["result"]["failure_mode"] == mode for ln in att_lines)
        passes = [ln["attempt_number"] for ln in att_lines if ln["result"]["passed"]]
        r["pass_at_1"] = sum(n == 1 for n in passes)
        r["pass_at_2_3"] = sum(2 <= n <= 3 for n in passes)
        r["pass_at_4plus"] = sum(n >= 4 for n in passes)
        r["rules_never_passed"] = len(rules) - len(passes)
        r["followed"] = sum(g[4] == "true" for g in gold)
        r["ignored"] = sum(g[4] == "false" for g in gold)
        out["runs"][run_id] = r
        long_scripts += sum(ln["fix_script"].count("\n") > 80 for ln in att_lines)
    out["rules_total"] = len(all_rules)
    out["tips_total"] = len(TIPS)
    out["tips_general"] = sum(rule is None for _, rule, _ in TIPS)
    retrieved = {t["tip_ref"] for lines, _ in runs.values() for ln in lines if ln["type"] == "retrieval"
                 for t in ln["tips"]}
    out["tips_retrieved"] = len(retrieved)
    out["long_scripts"] = long_scripts
    return out


README_TEMPLATE = """\
# STIG sample: run-6 and run-7

A hand-written sample of two consecutive STIG hardening runs of the Worker, made for the ctxgraph demo
and tests. It reproduces the case that motivated ADR-0019 (the "cryptography collapse" of run 7) inside
a realistic run log: tips, ranked retrievals, the Worker's complete fix scripts, evaluator results, and
**hand-written gold labels** (`gold_labels.csv`) saying, for every single retrieval, whether the script
actually followed the retrieved tip.

Nothing here was produced by a model or at random: every tip, script, result and label was written by
hand in `samples/build_sample.py`, which only lays the pieces out as files and assigns timestamps
(deterministically; re-running it gives byte-identical files). `samples/check_sample.py` validates the
set and prints the counts below.

    python3 samples/build_sample.py     # regenerate samples/stig/*
    python3 samples/check_sample.py     # validate, print counts (add --report for per-tip figures)

## The story

The Worker hardens a RHEL 9 lab host (`{host}`) rule by rule. Before each attempt, 3-5 tips are retrieved
from memory (ranked, cosine similarity 0.35-0.95) and put into its prompt; it writes a bash fix script;
the evaluator restores the host from a snapshot, runs the script, then the SSG check for the rule plus a
health probe (sshd answers, root can log in on the console, `stigadm` keeps sudo, network up). Results:
pass, or one of three failure modes: `clean_failure` (rule still not compliant), `evaluator_gap` (the
evaluator could not decide, e.g. the change needs a reboot or locked the audit subsystem) and
`health_failure` (the fix broke the host: sshd down, root locked out, SSH dropped, sudo gone).
A rule gets up to 4 attempts per run.

**The witness** (ADR-0019): rule `harden_sshd_macs_openssh_conf_crypto_policy`. Five tips
(`sshd-macs-cp-1` ... `sshd-macs-cp-5`) all say "use update-crypto-policies / a crypto-policies
sub-policy, don't edit ssh_config by hand". They are retrieved in both runs, same five, same rank order,
same scores, for every attempt. The lab host carries a legacy client drop-in
(`/etc/ssh/ssh_config.d/01-legacy-jumphost.conf`, with hmac-sha1 and umac) that `ssh_config` pulls in
through its `Include` line, and ssh keeps the first value it reads.

- **run-6** (`{w6}`): the Worker ignores all five tips and rewrites the whole client config with
  `cat <<EOF > /etc/ssh/ssh_config`; the new file has no `Include`, so the conflicting drop-in is gone and
  the rule **passes on attempt 1**. Outcome-only credit gives all five tips 1.0; gold labels: 0/5
  followed.
- **run-7** (`{w7}`, more obedient): the Worker follows the tips literally (STIG-MACS sub-policy module,
  `update-crypto-policies --set DEFAULT:STIG-MACS`, then `FIPS:STIG-MACS`, then re-applying it and even
  making sure the `Include` chain is intact). The back-end is right, the client still offers hmac-sha1:
  **three clean failures**, then the Worker gives up. Gold labels: 5/5 followed on every attempt.

Around it, 27 other rules show the other patterns the scoring has to tell apart (groups below): tips that
help, tips that mislead into clean failures, tips that break the host, and lucky neighbours that are
retrieved during passes without being followed. Run-7's Worker follows tips more often
({f7pct}% of its retrievals vs {f6pct}% in run-6), which helps where run-6 had ignored good advice
(sysctl conflicts, AIDE database, usb-storage, adjtimex, banners) and hurts where the advice is wrong.

## Files

All files are UTF-8. `.jsonl` files hold one JSON object per line.

### `tips.jsonl`
`{{"tip_ref": "sshd-macs-cp-1", "rule_id": "harden_sshd_macs_openssh_conf_crypto_policy", "body": "..."}}`
`tip_ref` is unique (kebab-case); `rule_id` is `null` for general tips (`gen-*`).

### `run-6.jsonl`, `run-7.jsonl`: run logs, in chronological order
- `{{"type": "run_start", "run_id": "run-6", "started_at": "...", ...}}` first (extra keys: skill, host,
  worker, memory settings, rules_planned);
- before each attempt a retrieval line, tips in rank order:
  `{{"type": "retrieval", "run_id", "rule_id", "attempt_number", "retrieved_at", "tips": [{{"tip_ref",
  "similarity_score"}}, ...]}}`, a few seconds before the attempt starts;
- the attempt: `{{"type": "attempt", "run_id", "rule_id", "attempt_number", "started_at", "ended_at",
  "fix_script": "<whole bash script>", "result": {{"passed": bool, "failure_mode": null |
  "clean_failure" | "evaluator_gap" | "health_failure"}}}}`;
- other types a reader must skip: `note` (`at`, `text`, optional `rule_id`) and `eval_detail` (`at`,
  `rule_id`, `attempt_number`, `check_id`, `result`, `detail`: what the evaluator saw);
- `{{"type": "run_end", "run_id", "ended_at", "rules_attempted", "rules_passed", "attempts"}}` last.

Timestamps are ISO 8601 UTC with `Z`, strictly increasing within a file (every line's time field:
`started_at`, `retrieved_at`, `started_at`/`ended_at`, `at`, `ended_at`); a rule's attempts are
consecutive and numbered from 1. Run-6 is on 2026-05-03, run-7 on 2026-05-10. No line carries an
`attempt_id` (both runs predate the ADR's auxiliary fix): map a retrieval to its attempt by run, rule and
`attempt_number`, or by the attempt window that follows `retrieved_at`.

### `gold_labels.csv`
Header `run_id,rule_id,attempt_number,tip_ref,followed,note`; exactly one row per retrieved tip of
every retrieval line in both runs (same order as the logs), `followed` is `true` / `false`, `note` says
why in a few words. **These labels are hand-written** by reading each script against each tip.

Labelling conventions: `followed = true` when the script's actions reflect the tip's advice (its command,
file, value or ordering). Prohibitions ("don't edit X") count as followed only when the script does the
governed thing the recommended way (not when the script never goes near it: note "not applicable").
Partly followed tips that contradict the tip's key value are `false` (e.g. `ClientAliveCountMax 0` against
a tip that says 600/1), and a tip from a neighbouring rule whose command the script happens to run is
`true` (e.g. `sshd-macs-cp-1` during `configure_crypto_policy`). Hard cases are deliberate.

## Counts

| | run-6 | run-7 | total |
|---|---:|---:|---:|
{count_rows}

Rules overall: {rules_total} (run-6 and run-7 share {rules_shared}). Tips: {tips_total} ({tips_general}
general with `rule_id` null, {tips_rule} rule-specific; {tips_retrieved} of them retrieved at least once).
Fix scripts longer than 80 lines: {long_scripts} (for the embedding leg's chunking).

## Tip groups (for the demo narrative)

{groups}

Under DEF-26 (graded outcome) and DEF-27 (follow weight, here from the gold labels) these groups separate:
`sshd-macs-cp-2` ... `cp-5` drop from an outcome-only hit rate of 0.25 (1.0 in run-6, 0.0 three times in
run-7) to 0.0 follow-weighted (`cp-1` keeps some credit because `configure_crypto_policy` also retrieves
it and follows its `--set FIPS`); harmful tips pick up the -0.2 of their health failures; lucky
neighbours lose the credit of passes they did not shape. Note that a helpful tip followed in the same
attempt as a harmful one (for example `gen-backup-before-edit`, `sshd-root-dropin-first`) shares that
attempt's -0.2: attribution is per retrieval, the outcome per attempt. `python3 samples/check_sample.py
--report` prints these figures per tip.
"""


def render_readme(runs, st) -> str:
    r6, r7 = st["runs"]["run-6"], st["runs"]["run-7"]
    rows = [
        ("rules attempted", "rules"), ("attempts", "attempts"), ("retrievals (tip rows)", "retrievals"),
        ("passed attempts", "passed"), ("- passed on attempt 1", "pass_at_1"),
        ("- passed on attempt 2-3", "pass_at_2_3"), ("- passed on attempt 4+", "pass_at_4plus"),
        ("rules never passed", "rules_never_passed"), ("clean_failure", "clean_failure"),
        ("evaluator_gap", "evaluator_gap"), ("health_failure", "health_failure"),
        ("gold: followed", "followed"), ("gold: ignored", "ignored"),
    ]
    count_rows = "\n".join(
        f"| {label} | {r6[k]} | {r7[k]} | {'' if k == 'rules' else r6[k] + r7[k]} |" for label, k in rows)
    rules6 = {ln["rule_id"] for ln in runs["run-6"][0] if ln["type"] == "attempt"}
    rules7 = {ln["rule_id"] for ln in runs["run-7"][0] if ln["type"] == "attempt"}
    groups = []
    for g in TIP_GROUPS.values():
        groups.append(f"**{g['title']}.** {g['text']}\n" + ", ".join(f"`{t}`" for t in g["tips"]) + "\n")
    f6 = round(100 * r6["followed"] / (r6["followed"] + r6["ignored"]))
    f7 = round(100 * r7["followed"] / (r7["followed"] + r7["ignored"]))
    return README_TEMPLATE.format(
        host=HOST, w6=RUN_META["run-6"]["worker"], w7=RUN_META["run-7"]["worker"], f6pct=f6, f7pct=f7,
        count_rows=count_rows, rules_total=st["rules_total"], rules_shared=len(rules6 & rules7),
        tips_total=st["tips_total"], tips_general=st["tips_general"],
        tips_rule=st["tips_total"] - st["tips_general"], tips_retrieved=st["tips_retrieved"],
        long_scripts=st["long_scripts"], groups="\n".join(groups))


def build() -> int:
    self_check()
    OUT.mkdir(parents=True, exist_ok=True)
    with (OUT / "tips.jsonl").open("w", encoding="utf-8", newline="\n") as fh:
        for ref, rule, body in TIPS:
            fh.write(json.dumps({"tip_ref": ref, "rule_id": rule, "body": body}, ensure_ascii=False) + "\n")
    runs = {run_id: build_run(run_id) for run_id in RUN_META}
    gold_rows: list[list[str]] = []
    for run_id, (lines, gold) in runs.items():
        dump_jsonl(OUT / f"{run_id}.jsonl", lines)
        gold_rows.extend(gold)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["run_id", "rule_id", "attempt_number", "tip_ref", "followed", "note"])
    w.writerows(gold_rows)
    (OUT / "gold_labels.csv").write_text(buf.getvalue(), encoding="utf-8", newline="\n")
    st = stats(runs)
    (OUT / "README.md").write_text(render_readme(runs, st), encoding="utf-8", newline="\n")
    print(f"wrote {OUT}: {st['tips_total']} tips, {st['rules_total']} rules, "
          + ", ".join(f"{k}: {v['attempts']} attempts / {v['retrievals']} retrievals"
                      for k, v in st["runs"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(build())
