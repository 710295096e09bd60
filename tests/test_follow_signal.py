"""The lexical follow signal (hard cases), its calibration, and the judge cascade's accounting."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from ctxgraph.follow_signal import calibration as cal
from ctxgraph.follow_signal import FEATURE_NAMES, SIGNAL_VERSION, agreement, extract_script, extract_tip

ROOT = Path(__file__).resolve().parents[1]

CRYPTO_TIP = ("Never put a MACs line into /etc/ssh/ssh_config; change MACs only with "
              "`update-crypto-policies --set FIPS` and confirm with `update-crypto-policies --show`.")
HEREDOC_SSH_CONFIG = """#!/usr/bin/env bash
set -euo pipefail
cp -a /etc/ssh/ssh_config /etc/ssh/ssh_config.bak
cat > /etc/ssh/ssh_config <<'EOF'
Host *
    MACs hmac-sha2-512,hmac-sha2-256
EOF
systemctl restart sshd
"""
POLICY = """#!/usr/bin/env bash
set -euo pipefail
# /etc/ssh/ssh_config stays untouched: the policy back-end owns the MACs
update-crypto-policies \\
    --set FIPS
update-crypto-policies --show | grep -qx FIPS
grep -i '^MACs' /etc/ssh/ssh_config || true
"""
DROPIN_TIP = "Set `PermitRootLogin no` in a drop-in such as /etc/ssh/sshd_config.d/00-stig.conf rather than editing sshd_config."
DROPIN_SCRIPT = """#!/usr/bin/env bash
set -euo pipefail
install -d -m 0755 /etc/ssh/sshd_config.d
printf 'PermitRootLogin no\\n' > /etc/ssh/sshd_config.d/00-stig.conf
sshd -t && systemctl reload sshd
"""
MAIN_FILE_SCRIPT = """#!/usr/bin/env bash
set -euo pipefail
sed -i 's/^#\\?PermitRootLogin.*/PermitRootLogin no/' /etc/ssh/sshd_config
sshd -t && systemctl reload sshd
"""
VALIDATE_TIP = "Validate the sshd configuration with `sshd -t` before reloading sshd."


def probability(tip: str, script: str, cosine: float | None = 0.5) -> float:
    features = agreement(extract_tip(tip), extract_script(script))
    return cal.DEFAULT.probability(cal.design_row(features.values, cosine))


def matched(tip: str, script: str, side: str = "prescribed") -> dict[str, float]:
    evidence = agreement(extract_tip(tip), extract_script(script)).evidence[side]
    return {item["text"]: item["matched"] for item in evidence}


def test_tip_says_never_x_and_the_script_does_x():
    tip = extract_tip(CRYPTO_TIP)
    assert any(i.text == "/etc/ssh/ssh_config" for i in tip.warned)
    assert any(i.text.startswith("update-crypto-policies --set") for i in tip.prescribed)
    assert matched(CRYPTO_TIP, HEREDOC_SSH_CONFIG, "warned")["/etc/ssh/ssh_config"] == 1.0
    # The policy script only reads ssh_config (grep) and names it in a comment: not an edit.
    assert matched(CRYPTO_TIP, POLICY, "warned")["/etc/ssh/ssh_config"] == 0.0
    assert probability(CRYPTO_TIP, POLICY) > 0.5 > probability(CRYPTO_TIP, HEREDOC_SSH_CONFIG)


def test_same_file_opposite_approach():
    # Both scripts set PermitRootLogin no; only one writes the drop-in the tip names.
    assert matched(DROPIN_TIP, DROPIN_SCRIPT)["/etc/ssh/sshd_config.d/00-stig.conf"] == 1.0
    assert matched(DROPIN_TIP, MAIN_FILE_SCRIPT)["/etc/ssh/sshd_config.d/00-stig.conf"] == 0.0
    assert probability(DROPIN_TIP, DROPIN_SCRIPT) > probability(DROPIN_TIP, MAIN_FILE_SCRIPT)


def test_a_comment_claiming_to_follow_is_not_code():
    script = """#!/usr/bin/env bash
set -euo pipefail
# validated with sshd -t as the guidance says
echo "config validated with sshd -t"
systemctl reload sshd
"""
    assert matched(VALIDATE_TIP, script)["sshd -t"] == 0.0
    followed = script.replace("systemctl reload sshd", "sshd -t && systemctl reload sshd")
    assert matched(VALIDATE_TIP, followed)["sshd -t"] == 1.0
    assert probability(VALIDATE_TIP, followed) > probability(VALIDATE_TIP, script)


def test_a_heredoc_that_writes_the_advised_file_counts_as_content():
    tip = "Put `-e 2` as the last rule in /etc/audit/rules.d/99-finalize.rules and load it with `augenrules --load`."
    script = """#!/usr/bin/env bash
set -euo pipefail
RULES=/etc/audit/rules.d/99-finalize.rules
cat > "$RULES" <<'EOF'
-e 2
EOF
augenrules --load
"""
    found = matched(tip, script)
    assert found["/etc/audit/rules.d/99-finalize.rules"] == 1.0   # through the variable
    assert found["-e 2"] == 1.0                                      # the heredoc body is file content
    assert found["augenrules --load"] == 1.0


def test_functions_count_only_when_called_and_messages_never():
    never_called = """#!/usr/bin/env bash
set -euo pipefail
validate() {
    sshd -t
}
log() { printf '%s\\n' "$*" >&2; }
log "remember to run sshd -t"
systemctl reload sshd
"""
    assert matched(VALIDATE_TIP, never_called)["sshd -t"] == 0.0
    called = never_called.replace("systemctl reload sshd", "validate\nsystemctl reload sshd")
    assert matched(VALIDATE_TIP, called)["sshd -t"] == 1.0


def test_echo_into_a_file_is_content_but_echo_to_the_terminal_is_not():
    tip = "Set `MaxAuthTries 4` in /etc/ssh/sshd_config.d/00-stig.conf."
    to_file = "echo 'MaxAuthTries 4' >> /etc/ssh/sshd_config.d/00-stig.conf\n"
    to_terminal = "echo 'set MaxAuthTries 4 in /etc/ssh/sshd_config.d/00-stig.conf by hand'\n"
    assert matched(tip, to_file)["MaxAuthTries 4"] == 1.0
    assert matched(tip, to_terminal) == {k: 0.0 for k in matched(tip, to_terminal)}


def features(tip: str, script: str) -> dict[str, float]:
    return agreement(extract_tip(tip), extract_script(script)).values


def evidence_of(tip: str, script: str, kind: str) -> dict[str, float]:
    evidence = agreement(extract_tip(tip), extract_script(script)).evidence["prescribed"]
    return {item["text"]: item["matched"] for item in evidence if item["kind"] == kind}


IDLE_TIP = "Set `ClientAliveInterval 600` and `ClientAliveCountMax 1`; current STIG versions expect CountMax 1, not the old 0."


def test_a_setting_given_another_value_conflicts():
    right = "printf 'ClientAliveInterval 600\\nClientAliveCountMax 1\\n' > /etc/ssh/sshd_config.d/10-idle.conf\n"
    wrong = right.replace("CountMax 1", "CountMax 0")
    assert features(IDLE_TIP, right)["value_conflict"] == 0.0
    assert features(IDLE_TIP, wrong)["value_conflict"] == 1.0
    assert evidence_of(IDLE_TIP, wrong, "value") == {"ClientAliveInterval 600": 1.0,
                                                      "ClientAliveCountMax 1 (script: 0)": 0.0}
    # A grep for the old value sets nothing; a sed replaces it (its pattern is not a value given).
    fixed = ("grep -q '^ClientAliveCountMax 0' /etc/ssh/sshd_config && "
             "sed -i 's/^ClientAliveCountMax 0/ClientAliveCountMax 1/' /etc/ssh/sshd_config\n")
    assert features(IDLE_TIP, fixed)["value_conflict"] == 0.0
    assert probability(IDLE_TIP, right) > probability(IDLE_TIP, wrong)


def test_modes_and_owners_are_read_whichever_command_sets_them():
    tip = "/etc/shadow and /etc/gshadow must be owned by root:root with mode 0000."
    chmod = "chown root:root /etc/shadow /etc/gshadow\nchmod 0000 /etc/shadow /etc/gshadow\n"
    debian = "chown root:shadow /etc/shadow /etc/gshadow\nchmod 0640 /etc/shadow /etc/gshadow\n"
    assert features(tip, chmod)["value_conflict"] == 0.0
    assert evidence_of(tip, debian, "value") == {"mode 0000 (script: 0640)": 0.0, "owner root:root (script: root:shadow)": 0.0}
    sudo_tip = "Install the rule into /etc/sudoers.d/ with mode 0440."
    assert evidence_of(sudo_tip, "install -m 0440 -o root /tmp/rule /etc/sudoers.d/50-ops\n", "value") == {"mode 0440": 1.0}


def test_a_mode_or_owner_item_is_found_whichever_command_sets_it():
    tip = "Make the private key owned by opendkim:opendkim with mode 0600."
    chmod = "chown -R opendkim:opendkim /etc/opendkim/keys\nchmod 600 /etc/opendkim/keys/a.private\n"
    install = "install -o opendkim -g opendkim -m 0600 /tmp/a.private /etc/opendkim/keys/a.private\n"
    for script in (chmod, install):
        assert evidence_of(tip, script, "setting") == {"mode 0600": 1.0, "owner opendkim:opendkim": 1.0}, script
        assert features(tip, script)["prescribed_missing"] == 0.0
    wrong = "chown root:root /etc/opendkim/keys/a.private\nchmod 0644 /etc/opendkim/keys/a.private\n"
    assert evidence_of(tip, wrong, "setting") == {"mode 0600": 0.5, "owner opendkim:opendkim": 0.5}
    assert probability(tip, chmod) > probability(tip, wrong)


def test_the_step_after_names_ends_at_the_next_and():
    # "Run X after editing ... and only restart if it passes" does not order the restart before X.
    tip = "Run `sssctl config-check` after editing the SSSD configuration and only restart sssd if it comes back clean."
    assert extract_tip(tip).order == []
    ordered = extract_tip("Restart sshd after running `sshd -t`.").order
    assert [([i.text for i in a], [i.text for i in b]) for a, b in ordered] == [(["sshd -t"], ["restart or reload"])]

def test_a_check_whose_failure_is_only_reported_does_not_hold_back_the_restart():
    tip = "Run `nginx -t` before reloading nginx; a broken configuration takes every site down."
    heeded = [
        "set -e\nnginx -t\nsystemctl reload nginx\n",
        "nginx -t && systemctl reload nginx\n",
        "if ! nginx -t; then\n  echo 'broken configuration' >&2\n  exit 1\nfi\nsystemctl reload nginx\n",
        "nginx -t || {\n  echo 'broken configuration' >&2\n  exit 1\n}\nsystemctl reload nginx\n",
        "die() { echo \"$*\" >&2; exit 1; }\nnginx -t || die 'broken configuration'\nsystemctl reload nginx\n",
        "if ! nginx -t; then\n  cp /root/nginx.conf.bak /etc/nginx/nginx.conf\nfi\nsystemctl reload nginx\n",
    ]
    ignored = [
        "set -e\nnginx -t || true\nsystemctl reload nginx\n",
        "nginx -t || echo 'WARNING: nginx -t failed'\nsystemctl reload nginx\n",
        "if ! nginx -t; then\n  echo 'WARNING: nginx -t failed' >&2\nfi\nsystemctl reload nginx\n",
        "if ! nginx -t; then echo 'nginx -t failed'; fi\nsystemctl reload nginx\n",
        "nginx -t || {\n  echo 'broken configuration' >&2\n}\nsystemctl reload nginx\n",
        "warn() { echo \"$*\" >&2; }\nnginx -t || warn 'broken configuration'\nsystemctl reload nginx\n",
    ]
    for script in heeded:
        assert evidence_of(tip, script, "order") == {"nginx -t before restart or reload": 1.0}, script
        assert features(tip, script)["order_broken"] == 0.0, script
    for script in ignored:
        assert evidence_of(tip, script, "order") == {"nginx -t before restart or reload (its failure ignored)": 0.0}, script
        assert features(tip, script)["order_broken"] == 1.0, script
    assert probability(tip, heeded[0]) > probability(tip, ignored[0])
    # A check run once ignored and once heeded before the reload keeps the order.
    twice = "nginx -t || true\nnginx -t\nsystemctl reload nginx\n"
    assert evidence_of(tip, twice, "order") == {"nginx -t before restart or reload": 1.0}


def test_a_checking_program_the_tip_names_alone_is_a_step_of_its_order():
    tip = "Validate with `unbound-checkconf` before restarting unbound, and put the previous file back if it fails."
    assert [([i.text for i in a], [i.text for i in b]) for a, b in extract_tip(tip).order] == \
        [(["unbound-checkconf"], ["restart or reload"])]
    after = "sed -i 's/a/b/' /etc/unbound/unbound.conf\nsystemctl restart unbound\nunbound-checkconf\n"
    assert features(tip, after)["order_broken"] == 1.0
    # A program word that names no check is no step: "enable `chronyd` before ..." orders nothing by it.
    assert extract_tip("Install `chronyd` before restarting the service.").order == []


def test_a_service_the_tip_stops_or_starts_first_is_a_step_of_its_order():
    stop_tip = "Stop `snmpd` before running `net-snmp-create-v3-user`; a running snmpd overwrites the new user."
    assert [([i.text for i in a], [i.text for i in b]) for a, b in extract_tip(stop_tip).order] == \
        [(["stop snmpd"], ["net-snmp-create-v3-user"])]
    create = "net-snmp-create-v3-user -ro -a SHA -A \"$A\" monitor\n"
    stopped_first = "systemctl stop snmpd\n" + create + "systemctl start snmpd\n"
    stopped_after = create + "systemctl stop snmpd\nsystemctl start snmpd\n"
    never_stopped = create + "systemctl restart snmpd\n"
    assert features(stop_tip, stopped_first)["order_broken"] == 0.0
    assert features(stop_tip, stopped_after)["order_broken"] == 1.0
    assert evidence_of(stop_tip, never_stopped, "order") == {"stop snmpd before net-snmp-create-v3-user (never done)": 0.0}
    # Before a service starts, its first start counts: a restart after the step does not mend it.
    start_tip = ("Generate the policy (`usbguard generate-policy > /etc/usbguard/rules.conf`) before starting or "
                 "enabling `usbguard`.")
    policy = "usbguard generate-policy > /etc/usbguard/rules.conf\n"
    assert features(start_tip, policy + "systemctl enable --now usbguard\n")["order_broken"] == 0.0
    assert features(start_tip, "systemctl enable --now usbguard\n" + policy + "systemctl restart usbguard\n")[
        "order_broken"] == 1.0
    # An option the tip enables is no service.
    assert extract_tip("Clear the tally with `faillock --user root --reset` after enabling even_deny_root.").order == []


def test_a_bound_named_before_its_value_compares_sizes_by_their_units():
    tip = "Cap the persistent journal with `SystemMaxUse=` of at most 500M and restart `systemd-journald`."
    assert [i.text for i in extract_tip(tip).prescribed if i.kind == "bound"] == ["SystemMaxUse <= 500M"]
    under, over = ("sed -i 's/^#\\?SystemMaxUse=.*/SystemMaxUse=" + size + "/' /etc/systemd/journald.conf\n"
                   for size in ("200M", "2G"))
    assert evidence_of(tip, under, "value") == {"SystemMaxUse <= 500M": 1.0}
    assert evidence_of(tip, over, "value") == {"SystemMaxUse <= 500M (script: 2G)": 0.0}
    # Another key with the same value is not the bounded one.
    runtime = "printf '[Journal]\\nRuntimeMaxUse=500M\\n' > /etc/systemd/journald.conf.d/size.conf\n"
    assert evidence_of(tip, runtime, "bound") == {"SystemMaxUse <= 500M": 0.0}
    assert [i.text for i in extract_tip("Keep `MaxRetries` no more than 5.").prescribed if i.kind == "bound"] == \
        ["MaxRetries <= 5"]


def test_a_symbolic_mode_and_long_install_options_set_the_mode_and_owner_they_spell():
    tip = "The Erlang cookie `/var/lib/rabbitmq/.erlang.cookie` must be owned by `rabbitmq:rabbitmq` with mode 0400."
    assert {i.text for i in extract_tip(tip).prescribed if i.kind == "setting"} == {"owner rabbitmq:rabbitmq",
                                                                                      "mode 0400"}
    spelled_long = "install --owner=rabbitmq --group=rabbitmq --mode=u=r,go= /tmp/c /var/lib/rabbitmq/.erlang.cookie\n"
    spelled_short = "install -o rabbitmq -g rabbitmq -m 0400 /tmp/c /var/lib/rabbitmq/.erlang.cookie\n"
    for script in (spelled_long, spelled_short, "chmod u=r,go= /var/lib/rabbitmq/.erlang.cookie\n"
                   "chown rabbitmq:rabbitmq /var/lib/rabbitmq/.erlang.cookie\n"):
        assert evidence_of(tip, script, "setting") == {"owner rabbitmq:rabbitmq": 1.0, "mode 0400": 1.0}, script
    # Another mode spelled symbolically is that other mode (as chmod 644 is); one with + or - depends
    # on the mode before, so it sets none.
    other = evidence_of(tip, "chmod 644 /var/lib/rabbitmq/.erlang.cookie\n", "setting")["mode 0400"]
    assert other < 1.0
    assert evidence_of(tip, "chmod u=rw,go=r /var/lib/rabbitmq/.erlang.cookie\n", "setting")["mode 0400"] == other
    assert evidence_of(tip, "chmod go-rwx /var/lib/rabbitmq/.erlang.cookie\n", "setting")["mode 0400"] == 0.0


def test_a_way_the_tip_only_allows_is_not_required():
    tip = ("Set `MaxAuthTries` to 4 or lower for sshd (a drop-in under /etc/ssh/sshd_config.d/ is fine) and reload "
           "sshd; editing `/etc/ssh/sshd_config` itself works as well.")
    prescribed = [(i.kind, i.text) for i in extract_tip(tip).prescribed]
    assert ("bound", "MaxAuthTries <= 4") in prescribed
    assert not any(kind == "path" for kind, _ in prescribed), prescribed
    main_file = "sed -i 's/^#\\?MaxAuthTries.*/MaxAuthTries 4/' /etc/ssh/sshd_config\nsystemctl reload sshd\n"
    drop_in = "echo 'MaxAuthTries 3' > /etc/ssh/sshd_config.d/20-tries.conf\nsystemctl reload sshd\n"
    assert features(tip, main_file)["prescribed_specific"] == features(tip, drop_in)["prescribed_specific"] == 1.0
    # A parenthesis that names no permission still prescribes what it names.
    assert ("path", "/etc/ssh/sshd_config.d") in [(i.kind, i.text) for i in extract_tip(
        "Set `MaxAuthTries` to 4 (in a drop-in under /etc/ssh/sshd_config.d/) and reload sshd.").prescribed]


def test_a_bound_is_kept_by_any_value_on_its_side():
    tip = "Set `MaxAuthTries` to 4 or lower for sshd and reload sshd, so brute-force clients are cut off early."
    assert [i.text for i in extract_tip(tip).prescribed if i.kind == "bound"] == ["MaxAuthTries <= 4"]
    lower, equal, higher = (f"echo 'MaxAuthTries {n}' > /etc/ssh/sshd_config.d/10-auth.conf\nsystemctl reload sshd\n"
                            for n in (3, 4, 6))
    assert features(tip, lower)["value_conflict"] == features(tip, equal)["value_conflict"] == 0.0
    assert features(tip, higher)["value_conflict"] == 1.0
    assert evidence_of(tip, higher, "value") == {"MaxAuthTries <= 4 (script: 6)": 0.0}
    # Found where its key is set, whatever the value: the bound is the value check's to judge.
    assert evidence_of(tip, lower, "bound") == {"MaxAuthTries <= 4": 1.0}
    assert probability(tip, lower) > probability(tip, higher)
    # Without a verb, with "at least", with "=": the same bound; a key with a bound is not also held
    # to the bound's own value.
    assert [(i.kind, i.text) for i in extract_tip("`PASS_MAX_DAYS` 60 or less in /etc/login.defs.").prescribed
            if i.kind in {"bound", "setting"}] == [("bound", "PASS_MAX_DAYS <= 60")]
    assert [(i.kind, i.text) for i in extract_tip("Raise `minlen` to at least 15.").prescribed] == \
        [("bound", "minlen >= 15"), ("word", "minlen")]
    assert [(i.kind, i.text) for i in extract_tip("Set minlen = 15 or more in pwquality.conf.").prescribed
            if i.kind in {"bound", "setting"}] == [("bound", "minlen >= 15")]
    # "Set X to N" with no bound is the setting "X N"; prose that names no key, or a command, is none.
    for prose in ("Set PASS_MAX_DAYS to 60 in /etc/login.defs.", "Set PASS_MAX_DAYS to 60, then run `chage`."):
        assert ("setting", "PASS_MAX_DAYS 60") in [(i.kind, i.text) for i in extract_tip(prose).prescribed], prose
    for prose in ("Set the timeout to 600 seconds or less.", "Reload nginx 2 or more times.",
                  "Set `net.ipv4.conf.all.rp_filter` to 1 or 2.", "Set `PermitRootLogin` to no, or prohibit-password."):
        assert not [i for i in extract_tip(prose).prescribed if i.kind in {"bound", "setting"}], prose
    # On the warned side a bound would take the key's presence for the warned act: it is dropped.
    assert not [i for i in extract_tip("Never set `MaxAuthTries` to 10 or more.").warned if i.kind == "bound"]


def test_text_piped_into_a_writer_is_file_content_and_into_a_logger_is_not():
    tip = "Set `LoginGraceTime 30` in a drop-in under /etc/ssh/sshd_config.d/."
    tee = "echo 'LoginGraceTime 30' | sudo tee /etc/ssh/sshd_config.d/20-grace.conf >/dev/null\n"
    logged = "echo 'LoginGraceTime 30 would be better' | logger -t hardening\n"
    assert extract_script(tee).lines == [tee.strip()]
    assert extract_script(logged).lines == []
    assert features(tip, tee)["prescribed_specific"] > features(tip, logged)["prescribed_specific"]
    # What is piped into a command that applies it (crontab -, chpasswd) is kept with the command.
    assert extract_script("echo '0 3 * * * /usr/sbin/aide --check' | crontab -\n").lines == \
        ["echo '0 3 * * * /usr/sbin/aide --check' | crontab -"]


VALIDATE_BEFORE = "Validate a service's configuration before you restart it (`sshd -t`, `visudo -c`, ...)."


def test_a_step_the_tip_orders_first_run_only_after_the_later_one():
    before = "cat > /etc/ssh/sshd_config.d/25.conf <<'EOF'\nIgnoreRhosts yes\nEOF\nsshd -t && systemctl restart sshd\n"
    after = "cat > /etc/ssh/sshd_config.d/25.conf <<'EOF'\nIgnoreRhosts yes\nEOF\nsystemctl restart sshd\nif sshd -t; then echo ok; fi\n"
    assert features(VALIDATE_BEFORE, before)["order_broken"] == 0.0
    assert features(VALIDATE_BEFORE, after)["order_broken"] == 1.0
    assert evidence_of(VALIDATE_BEFORE, after, "order") == {"sshd -t / visudo -c before restart or reload": 0.0}
    assert probability(VALIDATE_BEFORE, before) > probability(VALIDATE_BEFORE, after)


def test_a_subcommand_counts_where_the_command_runs_it_not_where_it_is_an_argument():
    tip = "Add a `ufw allow` rule for your SSH port before running `ufw enable`, otherwise you can lock yourself out."
    # `ufw default allow outgoing` holds both words but runs the subcommand default, not allow.
    enable_first = "ufw default deny incoming\nufw default allow outgoing\nufw --force enable\nufw allow OpenSSH\n"
    allow_first = "ufw default deny incoming\nufw default allow outgoing\nufw allow OpenSSH\nufw --force enable\n"
    assert evidence_of(tip, enable_first, "order") == {"ufw allow before ufw enable": 0.0}
    assert evidence_of(tip, allow_first, "order") == {"ufw allow before ufw enable": 1.0}
    assert probability(tip, allow_first) > probability(tip, enable_first)
    # Options and their values before the subcommand do not hide it.
    grafana = "Reset the admin password with `grafana-cli admin reset-admin-password`."
    assert features(grafana, 'grafana-cli --homepath /usr/share/grafana admin reset-admin-password "$pw"\n')[
        "prescribed_best"] == 1.0


def test_order_is_read_where_a_function_runs_not_where_it_is_defined():
    tip = "Turn on mod_headers with `a2enmod headers`, then check it with `apachectl configtest` before you `systemctl reload apache2`."
    script = """#!/bin/bash
set -euo pipefail
check() {
    apachectl configtest
}
apply() {
    systemctl reload apache2
}
a2enmod headers
check
apply
"""
    assert features(tip, script)["order_broken"] == 0.0
    reversed_calls = script.replace("check\napply\n", "apply\ncheck\n")
    assert evidence_of(tip, reversed_calls, "order") == {"a2enmod headers before apachectl configtest": 1.0,
                                                          "apachectl configtest before systemctl reload apache2": 0.0}


def test_a_trap_handler_runs_and_an_uncalled_function_does_not():
    tip = "After node maintenance run `kubectl uncordon <node>`."
    trapped = "done_maint() { kubectl uncordon node1; }\ntrap done_maint EXIT\nkubectl drain node1 --ignore-daemonsets\n"
    assert matched(tip, trapped)["kubectl uncordon <node>"] == 1.0
    uncalled = trapped.replace("trap done_maint EXIT\n", "")
    assert matched(tip, uncalled)["kubectl uncordon <node>"] == 0.0


def test_a_function_body_ends_where_its_braces_close_however_many_are_open():
    from ctxgraph.follow_signal.scripts import _functions

    lines = [(text, False) for text in ("outer() {", "  inner() {", "    echo in", "  }", "  echo out", "}",
                                        "broken() {", "  echo never closed")]
    assert _functions(lines) == {"outer": (0, 5), "inner": (1, 3), "broken": (6, 6)}
    # A brace in a heredoc body (content) does not close anything.
    lines[3] = ("  }", True)
    assert _functions(lines)["inner"] == (1, 5)
    # Thousands of definitions that never close (hostile input) are each read once: every one ends
    # at its own line, as a body never closed does.
    hostile = [("f() {", False)] * 20000
    assert set(_functions(hostile).values()) == {(19999, 19999)}


def test_a_printed_heredoc_is_a_message_and_a_commented_line_in_a_written_one_does_nothing():
    tip = "Check the syntax with `nginx -t` before reloading nginx."
    usage = "cat <<EOF\nUsage: run nginx -t yourself, then reload\nEOF\nsystemctl reload nginx\n"
    assert matched(tip, usage)["nginx -t"] == 0.0
    redis_tip = "Also set `maxmemory-policy allkeys-lru` in /etc/redis/redis.conf."
    commented = "cat >> /etc/redis/redis.conf <<'EOF'\nmaxmemory 2gb\n# maxmemory-policy allkeys-lru\nEOF\n"
    assert matched(redis_tip, commented)["maxmemory-policy allkeys-lru"] == 0.0
    assert matched(redis_tip, commented.replace("# maxmemory-policy", "maxmemory-policy"))["maxmemory-policy allkeys-lru"] == 1.0


def test_what_a_script_only_looks_for_or_removes_is_not_what_it_does():
    tip = "Strip `NOPASSWD` from every sudoers entry, and never grant `NOPASSWD: ALL` to a service account."
    strips = "grep -l 'NOPASSWD' /etc/sudoers.d/* | xargs -r sed -i 's/NOPASSWD: *//'\nvisudo -c\n"
    grants = "echo 'deploy ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/deploy\nvisudo -c\n"
    assert matched(tip, strips, "warned")["NOPASSWD: ALL"] == 0.0
    assert matched(tip, grants, "warned")["NOPASSWD: ALL"] == 1.0
    # A backup copy reads the file the tip forbids editing; appending to it writes it.
    never_sudoers = "Write sudo rules under /etc/sudoers.d/, and never append to /etc/sudoers directly."
    backup = "cp -a /etc/sudoers /root/sudoers.bak\nprintf 'x\\n' > /etc/sudoers.d/x\n"
    assert matched(never_sudoers, backup, "warned")["/etc/sudoers"] == 0.0
    assert matched(never_sudoers, "echo 'x' >> /etc/sudoers\n", "warned")["/etc/sudoers"] == 1.0


def test_negation_ends_where_the_advice_starts():
    tip = extract_tip("Never reload nginx on an unchecked config: run `nginx -t` first and only reload if it succeeds.")
    assert any(i.text == "nginx -t" for i in tip.prescribed)
    mask = extract_tip("To make sure a service can never be started again, use `systemctl mask --now <unit>`.")
    assert any(i.text.startswith("systemctl mask") for i in mask.prescribed)
    assert not any(i.kind == "command" for i in mask.warned)
    # What a tip only calls insufficient is not forbidden: a script that follows it may do it too.
    persist = extract_tip("Use `setsebool -P`; `setsebool` without -P alone is lost at the next boot.")
    assert not persist.warned
    # A code span keeps its own semicolon.
    hsts = extract_tip("Add the header with `add_header X always;` and reload - a header never needs a restart.")
    assert any(i.text == "add_header X always;" for i in hsts.prescribed)


def test_options_keep_their_case_and_clusters_match_split_flags():
    tip = "Finish by dumping the effective settings with `sshd -T`."
    assert matched(tip, "sshd -t && systemctl reload sshd\n")["sshd -T"] == 0.0
    assert matched(tip, "sshd -T | grep -i clientalive\n")["sshd -T"] == 1.0
    groups = "Add the user with `usermod -aG wheel alice`."
    assert matched(groups, "usermod -a -G wheel alice\n")["usermod -aG wheel alice"] == 1.0
    assert matched(groups, "usermod -G wheel alice\n")["usermod -aG wheel alice"] < 1.0


def test_one_of_a_tips_alternatives_is_enough():
    tip = "End every fix with a check of the effective value (`sshd -T`, `sysctl -n`, `auditctl -l`)."
    values = features(tip, "sysctl --system\nsysctl -n kernel.dmesg_restrict\n")
    assert values["prescribed_specific"] == 1.0 and values["prescribed_missing"] == 0.0
    assert features(tip, "sysctl --system\n")["prescribed_specific"] == 0.0


def test_the_same_action_spelled_another_way_matches():
    tip = "Apply it with `systemctl restart chronyd`."
    assert matched(tip, "service chronyd restart\n")["systemctl restart chronyd"] == 1.0
    assert matched(tip, "systemctl restart chronyd.service\n")["systemctl restart chronyd"] == 1.0
    assert matched(tip, "systemctl stop chronyd\n")["systemctl restart chronyd"] < 1.0
    # A command needs its subcommand: `systemctl daemon-reload` is not any systemctl.
    assert matched("Run `systemctl daemon-reload` after writing the drop-in.", "systemctl restart app\n")[
        "systemctl daemon-reload"] == 0.0


def test_a_prose_tip_is_compared_by_its_content_words_on_executable_lines():
    tip = "Keep a dated backup copy before editing anything, so every edit can be rolled back."
    does = "cp -a /etc/chrony.conf /etc/chrony.conf.backup.$(date +%F)\nsed -i 's/^pool .*/pool ntp.example.mil/' /etc/chrony.conf\n"
    claims = "# took a dated backup copy first\necho 'backup copy kept'\nsed -i 's/^pool .*/pool ntp.example.mil/' /etc/chrony.conf\n"
    assert features(tip, does)["prose_overlap"] > features(tip, claims)["prose_overlap"] == 0.0


def test_the_default_calibration_is_the_fit_on_the_labelled_pool(monkeypatch: pytest.MonkeyPatch):
    pytest.importorskip("sentence_transformers")
    # Fitted on the float32 model's cosines: the reference every faster runtime is measured against.
    monkeypatch.setenv("CTXGRAPH_EMBED_RUNTIME", "torch")
    sys.path.insert(0, str(ROOT / "bench"))
    import follow_signal_auc as bench

    sets = bench.labelled_sets()
    assert "holdout_n" not in bench.DEFAULT_POOL, "one set stays out of the default"
    designs = {name: bench.design(sets[name], bench.cosines(sets[name], None)) for name in bench.DEFAULT_POOL}
    labels = {name: np.array([p["followed"] for p in sets[name]], dtype=float) for name in bench.DEFAULT_POOL}
    x, y, groups = bench.pool_rows(sets, designs, labels, bench.DEFAULT_POOL)
    coefficients, intercept = cal.fit(x, y, 1.0, names=cal.feature_names())
    assert len(y) == cal.DEFAULT.examples and int(y.sum()) == cal.DEFAULT.positives
    assert np.allclose(coefficients, cal.DEFAULT.coefficients, atol=2e-4)
    assert abs(intercept - cal.DEFAULT.intercept) < 2e-4
    # Its provenance: the pool cross-validated by whole rules or tips, and the band on those predictions.
    predictions, folds = cal.cross_validate(x, y, groups, names=cal.feature_names())
    assert folds == cal.DEFAULT.cv_folds
    assert cal.auc(predictions.tolist(), y.astype(bool)) == pytest.approx(cal.DEFAULT.cv_auc, abs=5e-4)
    assert float(np.mean((predictions >= 0.5) == y)) == pytest.approx(cal.DEFAULT.cv_accuracy, abs=5e-4)
    low, high = cal.cascade_band(predictions, y.astype(bool), cal.DEFAULT.cascade_max_disagreement)
    assert (low, high) == pytest.approx((cal.DEFAULT.cascade_low, cal.DEFAULT.cascade_high), abs=1e-4)


def test_a_script_is_contrasted_with_the_tips_other_scripts():
    follows = agreement(extract_tip(CRYPTO_TIP), extract_script(POLICY)).values
    ignores = agreement(extract_tip(CRYPTO_TIP), extract_script(HEREDOC_SSH_CONFIG)).values
    follows_peers, ignores_peers = cal.peer_sums(["tip", "tip"], [follows, ignores])
    assert follows_peers.count == ignores_peers.count == 1
    alone = [cal.DEFAULT.probability_of(cal.design_values(v, 0.5)) for v in (follows, ignores)]
    contrasted = [cal.DEFAULT.probability_of(cal.design_values(follows, 0.5, follows_peers)),
                  cal.DEFAULT.probability_of(cal.design_values(ignores, 0.5, ignores_peers))]
    # Matching the tip more than its other script raises the follower; less lowers the other.
    assert contrasted[0] > alone[0] and contrasted[1] < alone[1]
    values = cal.design_values(follows, 0.5, follows_peers)
    assert values["no_peers"] == 0.0
    assert values["peer_prescribed_share"] == pytest.approx(follows["prescribed_share"] - ignores["prescribed_share"])
    assert cal.design_values(follows, 0.5)["no_peers"] == 1.0


def test_peer_sums_leave_each_example_out_of_its_own_group():
    rows = [dict.fromkeys(FEATURE_NAMES, 0.0) | {"prescribed_share": v} for v in (0.2, 0.4, 0.9, 0.5)]
    peers = cal.peer_sums(["a", "a", "a", "b"], rows)
    assert [p.count for p in peers] == [2, 2, 2, 0]
    assert peers[0].sums[0] == pytest.approx(1.3) and peers[2].sums[0] == pytest.approx(0.6)
    assert cal.design_values(rows[3], None, peers[3])["no_peers"] == 1.0


def test_a_calibration_reads_the_features_it_was_fitted_with():
    lexical = agreement(extract_tip(CRYPTO_TIP), extract_script(POLICY)).values
    values = cal.design_values(lexical, 0.7, cal.PeerSums().plus(lexical))
    older = cal.Calibration(cal.feature_names()[:12], cal.DEFAULT.coefficients[:12], cal.DEFAULT.intercept)
    assert older.probability_of(values) == pytest.approx(older.probability([values[n] for n in older.feature_names]))
    with pytest.raises(ValueError, match="needs features this signal does not compute: from_elsewhere"):
        cal.Calibration(("prescribed_share", "from_elsewhere"), (1.0, 1.0), 0.0).probability_of(values)


def test_cascade_band_keeps_disagreement_under_the_rate():
    rng = np.random.default_rng(7)
    p = rng.uniform(size=400)
    labels = rng.uniform(size=400) < p            # calibrated by construction
    low, high = cal.cascade_band(p.tolist(), labels.tolist(), 0.05)
    outside = (p < low) | (p > high)
    assert ((p[outside] >= 0.5) != labels[outside]).sum() / len(p) <= 0.05
    assert low <= 0.5 <= high
    # A perfect signal needs no judge at all; a useless one needs it everywhere.
    assert cal.cascade_band([0.1, 0.9], [False, True], 0.0) == (0.5, 0.5)
    low, high = cal.cascade_band([0.9, 0.1], [False, True], 0.0)
    assert low <= 0.1 and high >= 0.9


def test_cascade_band_saves_the_most_judge_calls_the_rate_allows():
    # Against every pair of candidate ends, tried by brute force: no band that keeps within the
    # rate leaves more examples outside it.
    rng = np.random.default_rng(11)
    for trial in range(20):
        p = np.round(rng.beta(0.6, 0.6, size=60), 2)
        labels = rng.uniform(size=60) < p
        rate = [0.0, 0.03, 0.1][trial % 3]
        low, high = cal.cascade_band(p.tolist(), labels.tolist(), rate)
        outside = (p < low) | (p > high)
        assert ((p[outside] >= 0.5) != labels[outside]).sum() <= rate * len(p) + 1e-9
        ends = sorted(set(p.tolist()) | {0.0, 0.5, 1.0})
        most = 0
        for lo in (e for e in ends if e <= 0.5):
            for hi in (e for e in ends if e >= 0.5):
                out = (p < lo) | (p > hi)
                if ((p[out] >= 0.5) != labels[out]).sum() <= rate * len(p) + 1e-9:
                    most = max(most, int(out.sum()))
        assert int(outside.sum()) == most
    # With no disagreement allowed, each end stops at the first probability whose rows disagree.
    p = [0.1, 0.15, 0.25, 0.25, 0.7, 0.7, 0.7, 0.9]
    labels = [False, False, True, False, False, True, True, True]
    assert cal.cascade_band(p, labels, 0.0) == (0.25, 0.7)


def test_a_fit_from_a_prior_stays_near_it_where_the_examples_say_little():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(12, 3))
    y = (x[:, 0] + rng.normal(scale=2.0, size=12) > 0).astype(float)
    prior = (1.5, -2.0, 0.75)
    from_scratch, _ = cal.fit(x, y, 1.0)
    from_prior, _ = cal.fit(x, y, 1.0, prior=prior)
    # Twelve noisy examples move a fit only part of the way from where its ridge pulls it.
    assert np.linalg.norm(from_prior - np.array(prior)) < np.linalg.norm(from_scratch - np.array(prior))
    assert np.linalg.norm(from_scratch) < np.linalg.norm(from_prior)
    # Many examples outweigh the prior: both fits meet.
    x = rng.normal(size=(4000, 3))
    y = (rng.uniform(size=4000) < 1 / (1 + np.exp(-(x @ np.array([1.0, 0.0, -1.0]))))).astype(float)
    assert np.allclose(cal.fit(x, y, 1.0)[0], cal.fit(x, y, 1.0, prior=prior)[0], atol=0.01)
    with pytest.raises(ValueError, match="a prior of 2 coefficients for 3 features"):
        cal.fit(x, y, 1.0, prior=(1.0, 2.0))


def test_cross_validation_never_scores_a_rule_with_its_own_labels():
    x = np.array([[0.0], [1.0], [0.0], [1.0], [0.0], [1.0]])
    y = np.array([0.0, 1.0, 0.0, 1.0, 1.0, 0.0])
    groups = ["a", "a", "b", "b", "c", "c"]
    predictions, folds = cal.cross_validate(x, y, groups, folds=3)
    assert folds == 3
    # Rule c contradicts a and b: scored by a model fitted on a and b only, it is ranked backwards.
    assert predictions[5] > predictions[4]


# --- against the database: the calibration round trip and the cascade's accounting --------------------

SCRIPTS = {
    True: POLICY,
    False: HEREDOC_SSH_CONFIG,
}


def seed_crypto_run(seed, rules: int = 6):
    attempts = []
    for n in range(rules):
        for followed in (True, False):
            attempts.append({"rule": f"crypto_{n}", "tips": [f"{CRYPTO_TIP} [{uuid.uuid4().hex[:8]}]"],
                             "script": SCRIPTS[followed], "passed": followed,
                             "failure_mode": None if followed else "clean_failure"})
    return seed(attempts)


def test_calibration_round_trip_on_judge_verdicts(conn, seed, capsys):
    from judge_stub_server import StubServer, verdict

    from ctxgraph import evaluation, scoring_pass
    from ctxgraph.cli import main
    from ctxgraph.client import Client

    # Verdicts enough for calibrate's minimum of each class (calibration.MIN_PER_CLASS) from this run alone.
    run = seed_crypto_run(seed, rules=cal.MIN_PER_CLASS)
    with StubServer() as server:
        server.responder = lambda request: verdict("cat > /etc/ssh/ssh_config" not in request.messages[-1]["content"])
        first = scoring_pass.run_pass(conn, scoring_pass.PassConfig(
            skill=run.skill, run_id=run.run_id, log_path=run.log_path, judge_url=server.base_url, use_embed=False))
    assert first.signal_written == len(run.retrieval_ids)
    assert first.calibration is not None and "calibration" in first.calibration
    # The command says where the fit started, and --dry-run stores nothing.
    before = Client(conn).current_follow_calibration(run.skill, SIGNAL_VERSION)
    conn.commit()
    assert main(["calibrate", "--skill", run.skill, "--max-disagreement", "0.05", "--dry-run"]) == 0
    assert "; from the default calibration" in capsys.readouterr().out
    assert main(["calibrate", "--skill", run.skill, "--max-disagreement", "0.05", "--dry-run", "--from-scratch"]) == 0
    printed = capsys.readouterr().out
    assert "from the default" not in printed and "not stored (--dry-run)" in printed
    assert Client(conn).current_follow_calibration(run.skill, SIGNAL_VERSION) == before
    conn.commit()
    # From scratch (the ridge toward zero) and, as stored, from the default calibration.
    scratch = evaluation.calibrate(conn, run.skill, None, max_disagreement=0.05, save=False, from_default=False)
    assert "default" not in scratch.calibration.source
    result = evaluation.calibrate(conn, run.skill, None, max_disagreement=0.05)
    conn.commit()
    assert result.calibration.source.endswith("; from the default calibration")
    assert result.calibration.coefficients != pytest.approx(scratch.calibration.coefficients)
    stored = Client(conn).current_follow_calibration(run.skill, SIGNAL_VERSION)
    conn.commit()
    assert stored["calibration_id"] == result.calibration.calibration_id
    assert stored["source"] == result.calibration.source
    assert stored["fitted_on"] == "judge" and stored["examples"] >= len(run.retrieval_ids)
    assert list(stored["feature_names"]) == list(cal.feature_names())
    assert cal.Calibration.from_row(stored).coefficients == pytest.approx(result.calibration.coefficients)

    # The next pass uses it and says so per row.
    again = seed_crypto_run(seed, rules=1)
    summary = scoring_pass.run_pass(conn, scoring_pass.PassConfig(
        skill=again.skill, run_id=again.run_id, log_path=again.log_path, use_judge=False, use_embed=False))
    assert f"calibration {stored['calibration_id']}" in summary.calibration
    used = conn.execute("SELECT DISTINCT calibration_id, signal_status FROM ctxgraph.retrieval_scores"
                        " WHERE retrieval_id = ANY(%s)", (again.retrieval_ids,)).fetchall()
    probabilities = conn.execute("SELECT follow_probability FROM ctxgraph.tip_retrievals WHERE id = ANY(%s)"
                                 " ORDER BY id", (again.retrieval_ids,)).fetchall()
    conn.commit()
    assert used == [(stored["calibration_id"], "computed")]
    assert probabilities[0][0] > 0.5 > probabilities[1][0]


def test_the_pass_contrasts_a_script_with_the_tips_scripts_scored_before_and_beside_it(conn, seed):
    from ctxgraph import scoring_pass
    from ctxgraph.client import Client

    def evidence(ids):
        rows = conn.execute("SELECT r.id, s.follow_evidence, r.follow_probability FROM ctxgraph.retrieval_scores AS s"
                            " JOIN ctxgraph.tip_retrievals AS r ON r.id = s.retrieval_id"
                            " WHERE s.retrieval_id = ANY(%s) ORDER BY r.id", (ids,)).fetchall()
        conn.commit()
        return rows

    def score(run):
        scoring_pass.run_pass(conn, scoring_pass.PassConfig(
            skill=run.skill, run_id=run.run_id, log_path=run.log_path, use_judge=False, use_embed=False))

    first = seed([{"rule": "crypto_peer", "tips": [CRYPTO_TIP], "script": HEREDOC_SSH_CONFIG, "passed": False,
                   "failure_mode": "clean_failure"}])
    score(first)
    tip = first.attempts[0].tip_ids[0]
    ((_, ignored, _),) = evidence(first.retrieval_ids)
    assert ignored["peers"] == 0
    # The next run's script is contrasted with the one scored before; two of the same batch with each other.
    second = seed([{"rule": "crypto_peer", "tips": [tip], "script": POLICY, "passed": True},
                   {"rule": "crypto_peer", "tips": [tip], "script": POLICY, "passed": True}])
    score(second)
    rows = evidence(second.retrieval_ids)
    assert [e["peers"] for _, e, _ in rows] == [2, 2]
    stored = Client(conn).current_follow_calibration(second.skill, SIGNAL_VERSION)
    conn.commit()
    in_force = cal.Calibration.from_row(stored) if stored else cal.DEFAULT
    peers = cal.PeerSums().plus(ignored["features"]).plus(rows[1][1]["features"])
    assert rows[0][2] == pytest.approx(in_force.probability_of(cal.design_values(rows[0][1]["features"], None, peers)))


def test_cascade_asks_the_judge_only_inside_the_band(conn, seed):
    from judge_stub_server import StubServer, verdict

    from ctxgraph import scoring_pass
    from ctxgraph.client import Client

    run = seed_crypto_run(seed, rules=3)
    skill = run.skill
    # A band that no probability of these two scripts falls into: every row is decided by the signal.
    Client(conn).save_follow_calibration(
        skill, SIGNAL_VERSION, "logistic", cal.feature_names(), cal.DEFAULT.coefficients, cal.DEFAULT.intercept,
        "labels", "test: a narrow band", 10, 5, 0.9, 0.8, 2, 0.4999, 0.5001, 0.05)
    conn.commit()
    with StubServer() as server:
        server.responder = lambda request: verdict(True)
        summary = scoring_pass.run_pass(conn, scoring_pass.PassConfig(
            skill=skill, run_id=run.run_id, log_path=run.log_path, judge_url=server.base_url, use_embed=False,
            judge_policy="uncertain", cascade_check_share=0.0))
        asked = len(server.chat_requests())
    assert asked == summary.judge_calls == 0
    assert summary.judge_calls_saved == len(run.retrieval_ids)
    rows = conn.execute("SELECT s.llm_status, r.tip_followed_llm, r.tip_followed_computed_at IS NOT NULL"
                        " FROM ctxgraph.retrieval_scores AS s JOIN ctxgraph.tip_retrievals AS r"
                        "   ON r.skill = s.skill AND r.id = s.retrieval_id WHERE s.retrieval_id = ANY(%s)",
                        (run.retrieval_ids,)).fetchall()
    conn.commit()
    assert set(rows) == {("decided_by_signal", None, True)}

    # A band covering everything: the judge is asked for every row, nothing saved.
    Client(conn).save_follow_calibration(
        skill, SIGNAL_VERSION, "logistic", cal.feature_names(), cal.DEFAULT.coefficients, cal.DEFAULT.intercept,
        "labels", "test: the whole range", 10, 5, 0.9, 0.8, 2, 0.0, 1.0, 0.0)
    conn.commit()
    wide = seed_crypto_run(seed, rules=2)
    with StubServer() as server:
        server.responder = lambda request: verdict(True)
        summary = scoring_pass.run_pass(conn, scoring_pass.PassConfig(
            skill=skill, run_id=wide.run_id, log_path=wide.log_path, judge_url=server.base_url, use_embed=False,
            judge_policy="uncertain"))
        asked = len(server.chat_requests())
    assert asked == summary.judge_calls == len(wide.retrieval_ids) and summary.judge_calls_saved == 0


def _narrow_band(conn, skill):
    """A stored calibration whose band no probability of the crypto scripts falls into."""
    from ctxgraph.client import Client

    Client(conn).save_follow_calibration(
        skill, SIGNAL_VERSION, "logistic", cal.feature_names(), cal.DEFAULT.coefficients, cal.DEFAULT.intercept,
        "labels", "test: a narrow band", 10, 5, 0.9, 0.8, 2, 0.4999, 0.5001, 0.03)
    conn.commit()


def _agreeing(request):
    """A judge that agrees with the signal: the followed script is the one without the MACs heredoc."""
    from judge_stub_server import verdict

    return verdict("cat > /etc/ssh/ssh_config" not in request.messages[-1]["content"])


def _contradicting(request):
    """A judge that contradicts the signal on every row: the band, fitted elsewhere, is wrong here."""
    from judge_stub_server import verdict

    return verdict("cat > /etc/ssh/ssh_config" in request.messages[-1]["content"])


def _cascade_pass(conn, run, responder, **config):
    """One pass over the run with --judge-policy uncertain (batches of 8): its summary and the
    questions the judge was asked."""
    from judge_stub_server import StubServer

    from ctxgraph import scoring_pass

    with StubServer() as server:
        server.responder = responder
        summary = scoring_pass.run_pass(conn, scoring_pass.PassConfig(
            skill=run.skill, run_id=run.run_id, log_path=run.log_path, judge_url=server.base_url, use_embed=False,
            judge_policy="uncertain", batch_size=8, **config))
        return summary, len(server.chat_requests())


def _forget_run(conn, run):
    """Drop a run whose verdicts contradict the signal, so no later calibration of the skill fits on them."""
    conn.execute("DELETE FROM ctxgraph.tip_retrievals WHERE skill = %s AND run_id = %s", (run.skill, run.run_id))
    conn.commit()


def _judge_statuses(conn, ids):
    rows = conn.execute("SELECT s.retrieval_id, s.llm_status FROM ctxgraph.retrieval_scores AS s"
                        " WHERE s.retrieval_id = ANY(%s) ORDER BY s.retrieval_id", (ids,)).fetchall()
    conn.commit()
    return dict(rows)


def test_the_cascade_checks_a_share_of_the_rows_it_decides_and_keeps_deciding_when_they_agree(conn, seed):
    run = seed_crypto_run(seed, rules=20)
    _narrow_band(conn, run.skill)
    summary, asked = _cascade_pass(conn, run, _agreeing, cascade_check_share=0.5)
    statuses = _judge_statuses(conn, run.retrieval_ids)
    assert summary.cascade is not None and not summary.cascade.stopped
    assert summary.cascade.checked == asked == summary.judge_calls and summary.cascade.disagreed == 0
    assert 0 < asked < len(run.retrieval_ids)
    assert summary.judge_calls_saved == len(run.retrieval_ids) - asked
    assert sorted(statuses.values()).count("judged") == asked
    assert sorted(statuses.values()).count("decided_by_signal") == len(run.retrieval_ids) - asked
    assert "checked with the judge, the signal disagreed on 0" in summary.render()


def test_the_cascade_stops_when_its_checks_disagree_with_the_judge(conn, seed):
    from judge_stub_server import StubServer

    from ctxgraph import scoring_pass

    run = seed_crypto_run(seed, rules=20)
    _narrow_band(conn, run.skill)
    # No always-checked first rows: the check starts from the share alone, so some rows are decided
    # before it has seen enough to stop.
    summary, asked = _cascade_pass(conn, run, _contradicting, cascade_check_share=0.5, cascade_check_first=0)
    statuses = _judge_statuses(conn, run.retrieval_ids)
    decided = [rid for rid, status in statuses.items() if status == "decided_by_signal"]
    assert summary.cascade.stopped and summary.cascade.checked >= cal.CASCADE_CHECK_MIN
    assert any("judge cascade stopped" in note for note in summary.notes)
    # Only rows of batches finished before the check stopped it were decided by the signal; every
    # row claimed after (the ids are claimed in order) went to the judge.
    assert 0 < len(decided) < len(run.retrieval_ids) - cal.CASCADE_CHECK_MIN
    assert asked == len(run.retrieval_ids) - len(decided) == summary.judge_calls
    after = [status for rid, status in statuses.items() if rid > max(decided)]
    assert after and set(after) == {"judged"}

    # The note's remedy: the judge answers the rows decided before the stop.
    with StubServer() as server:
        server.responder = _contradicting
        again = scoring_pass.run_pass(conn, scoring_pass.PassConfig(
            skill=run.skill, run_id=run.run_id, log_path=run.log_path, judge_url=server.base_url, use_embed=False,
            rescore=("decided_by_signal",)))
        assert len(server.chat_requests()) == len(decided) == again.rescored
    assert set(_judge_statuses(conn, run.retrieval_ids).values()) == {"judged"}
    _forget_run(conn, run)


def test_the_first_rows_outside_the_band_are_always_checked(conn, seed):
    """A small run gets a real test: with the default first checks, a band that is wrong for this
    run stops before it decides a single row against the judge."""
    run = seed_crypto_run(seed, rules=20)
    _narrow_band(conn, run.skill)
    summary, asked = _cascade_pass(conn, run, _contradicting)
    assert summary.cascade.stopped and asked == len(run.retrieval_ids)
    assert set(_judge_statuses(conn, run.retrieval_ids).values()) == {"judged"}
    _forget_run(conn, run)


def test_without_checks_a_wrong_band_decides_every_row_against_the_judge(conn, seed):
    """The control: the same run and judge, no checks (--cascade-check 0), and nothing is asked."""
    run = seed_crypto_run(seed, rules=20)
    _narrow_band(conn, run.skill)
    summary, asked = _cascade_pass(conn, run, _contradicting, cascade_check_share=0.0)
    assert asked == 0 and not summary.cascade.stopped
    assert set(_judge_statuses(conn, run.retrieval_ids).values()) == {"decided_by_signal"}
    _forget_run(conn, run)


def test_a_later_run_starts_from_the_checks_of_the_earlier_runs(conn, seed):
    """The first checks are the skill's, not every pass's: a second run under the same band and judge
    pays none of them, and its summary names the earlier run's checks."""
    first = seed_crypto_run(seed, rules=20)
    _narrow_band(conn, first.skill)
    # A share that selects nothing by hash: only the first checks are asked.
    summary, asked = _cascade_pass(conn, first, _agreeing, cascade_check_share=1e-9)
    assert asked == cal.CASCADE_CHECK_FIRST and not summary.cascade.stopped
    second = seed_crypto_run(seed, rules=20)
    summary, asked = _cascade_pass(conn, second, _agreeing, cascade_check_share=1e-9)
    assert asked == summary.judge_calls == 0 and summary.judge_calls_saved == len(second.retrieval_ids)
    assert (summary.cascade.earlier_checked, summary.cascade.earlier_disagreed) == (cal.CASCADE_CHECK_FIRST, 0)
    assert summary.cascade.earlier_outside == summary.cascade.earlier_rows == len(first.retrieval_ids)
    assert f"the skill's earlier runs: {cal.CASCADE_CHECK_FIRST} checked, 0 disagreed" in summary.render()


def test_a_band_that_failed_on_an_earlier_run_is_not_trusted_on_the_next(conn, seed):
    """The check's verdict outlives the pass: after a run on which the band broke its promise, the next
    run asks the judge everywhere from its first row, although on its own (no first checks) it would
    have decided most rows before seeing enough to stop."""
    first = seed_crypto_run(seed, rules=20)
    _narrow_band(conn, first.skill)
    summary, _ = _cascade_pass(conn, first, _contradicting)
    assert summary.cascade.stopped
    second = seed_crypto_run(seed, rules=3)
    summary, asked = _cascade_pass(conn, second, _contradicting, cascade_check_first=0)
    assert summary.cascade.stopped and asked == summary.judge_calls == len(second.retrieval_ids)
    assert summary.cascade.checked == 0 and summary.cascade.earlier_disagreed == summary.cascade.earlier_checked > 0
    assert any(note.startswith("judge cascade not used") for note in summary.notes)
    assert set(_judge_statuses(conn, second.retrieval_ids).values()) == {"judged"}
    _forget_run(conn, first)
    _forget_run(conn, second)
