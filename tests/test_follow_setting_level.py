"""Matching at the setting level (ctxgraph.follow_signal.setting_level): the tip's settings, files and
commands against what the parsed script writes and runs. No database."""

from __future__ import annotations

import pytest

from ctxgraph.follow_signal import agreement, extract_script, extract_tip
from ctxgraph.follow_signal.calibration import DEFAULT, design_values, nothing_to_compare
from ctxgraph.follow_signal.setting_level import TipSetting, accepts, setting_features, tip_facts
from ctxgraph.follow_signal.shell import read_script


def features(tip: str, script: str) -> tuple[dict[str, float], dict]:
    items = extract_tip(tip)
    return setting_features(tip_facts(items.prescribed, items.warned, items.text), read_script(script))


def statuses(tip: str, script: str) -> list[str]:
    return [entry[2] for entry in features(tip, script)[1]["settings"]]


SSH_TIP = "Set `PermitRootLogin no` in /etc/ssh/sshd_config and reload sshd."


# --- values the tip accepts ----------------------------------------------------------------------

@pytest.mark.parametrize(("wanted", "written", "ok"), [
    (TipSetting("PermitRootLogin", "no"), "no", True),
    (TipSetting("PermitRootLogin", "no"), '"no"', True),
    (TipSetting("PermitRootLogin", "no"), "yes", False),
    (TipSetting("X11Forwarding", "no"), "false", True),        # booleans by class
    (TipSetting("UsePAM", "yes"), "on", True),
    (TipSetting("mode", "0600"), "600", True),
    (TipSetting("mode", "0600"), "0400", True),                # stricter than the most the tip allows
    (TipSetting("mode", "0600"), "0640", False),
    (TipSetting("mode", "0400"), "u=r,go=", True),             # symbolic, assignments only
    (TipSetting("SystemMaxUse", bound=("<=", 500 * 1024 ** 2)), "200M", True),
    (TipSetting("SystemMaxUse", bound=("<=", 500 * 1024 ** 2)), "1G", False),
    (TipSetting("deny", bound=(">=", 3)), "5", True),
    (TipSetting("deny", bound=(">=", 3)), "many", False),
    (TipSetting("maxmemory", "2gb"), "2GB", True),
    (TipSetting("options", "nodev,nosuid,noexec"), "defaults,noexec,nosuid,nodev", True),
    (TipSetting("options", "nodev,nosuid,noexec"), "defaults,nodev,nosuid", False),
    (TipSetting("add_header", "... always;"), 'Strict-Transport-Security "max-age=1" always', True),
    (TipSetting("Match", "Address <bastion-ip>"), "Address 10.20.0.5", True),
    (TipSetting("Match", "Address <bastion-ip>"), "User backup", False),
    (TipSetting("Storage"), "anything", True),                  # no value: any
])
def test_a_written_value_is_accepted_by_the_tips_value_or_bound(wanted, written, ok):
    assert accepts(wanted, written) is ok


# --- reading the tip -------------------------------------------------------------------------------

def test_a_tip_reads_as_settings_files_and_forbidden_values():
    items = extract_tip("Persist `net.ipv4.ip_forward = 0` under /etc/sysctl.d/; never use `no_root_squash`.")
    facts = tip_facts(items.prescribed, items.warned)
    assert [(s.key, s.value) for s in facts.settings] == [("net.ipv4.ip_forward", "0")]
    assert facts.files == ["/etc/sysctl.d"]
    assert facts.forbidden_values == ["no_root_squash"]


def test_a_program_the_tip_names_like_a_setting_is_a_command():
    items = extract_tip("Persist iptables rules with `netfilter-persistent save` after every change.")
    facts = tip_facts(items.prescribed, items.warned)
    assert facts.settings == []
    assert [(c.name, c.subcommand) for c in facts.commands] == [("netfilter-persistent", "save")]


def test_a_key_the_tip_gives_two_values_is_not_checked():
    tip = "RHEL ships `X11Forwarding yes` in sshd_config; change that line to `X11Forwarding no`."
    items = extract_tip(tip)
    assert [s.key for s in tip_facts(items.prescribed, items.warned).settings] == []


# --- the script's writes against the tip's settings -------------------------------------------------

def test_the_setting_through_any_writer_is_a_follow():
    heredoc = "cat > /etc/ssh/sshd_config.d/00-root.conf <<'EOF'\nPermitRootLogin no\nEOF\n"
    sed = "sed -i 's/^#\\?PermitRootLogin.*/PermitRootLogin no/' /etc/ssh/sshd_config\n"
    helper = ("set_opt() {\n  local key=$1 value=$2\n"
              "  sed -i \"s/^${key}.*/${key} ${value}/\" /etc/ssh/sshd_config\n}\n"
              "set_opt PermitRootLogin no\n")
    for script in (heredoc, sed, helper):
        assert statuses(SSH_TIP, script) == ["followed"], script


def test_the_same_file_with_another_key_is_not_a_follow():
    script = "echo 'MaxAuthTries 3' >> /etc/ssh/sshd_config\nsystemctl reload sshd\n"
    values, found = features(SSH_TIP, script)
    assert found["settings"] == [["PermitRootLogin", "no", "absent"]]
    assert values["setting_followed"] == 0.0
    assert values["setting_elsewhere"] == 1.0
    assert values["comparable"] == 1.0  # the tip's file is written: there is something to compare


def test_the_last_write_decides_and_a_later_file_overrides():
    tip = "Set `ssl_min_protocol = TLSv1.2` in Dovecot's SSL settings."
    overridden = ("echo 'ssl_min_protocol = TLSv1.2' >> /etc/dovecot/conf.d/10-ssl.conf\n"
                  "echo 'ssl_min_protocol = TLSv1.1' >> /etc/dovecot/local.conf\n")
    assert statuses(tip, overridden) == ["conflict"]
    later_fixed = ("echo 'ssl_min_protocol = TLSv1' >> /etc/dovecot/local.conf\n"
                   "sed -i 's/^ssl_min_protocol.*/ssl_min_protocol = TLSv1.2/' /etc/dovecot/local.conf\n")
    assert statuses(tip, later_fixed) == ["followed"]


def test_a_key_written_several_times_into_one_file_is_a_list():
    tip = "Restrict the cache manager with `http_access allow localhost manager` in squid.conf."
    script = ("cat >> /etc/squid/squid.conf <<'EOF'\nhttp_access allow localhost manager\n"
              "http_access deny manager\nEOF\n")
    assert statuses(tip, script) == ["followed"]


def test_commenting_the_key_out_after_setting_it_is_a_conflict_and_moving_it_is_not():
    tip = "Set `minlen = 15` in /etc/security/pwquality.conf."
    commented = ("echo 'minlen = 15' >> /etc/security/pwquality.conf\n"
                 "sed -i 's/^minlen/#minlen/' /etc/security/pwquality.conf\n")
    assert statuses(tip, commented) == ["conflict"]
    moved = ("sed -i '/^minlen/d' /etc/security/pwquality.conf\n"
             "echo 'minlen = 15' > /etc/security/pwquality.conf.d/50-minlen.conf\n")
    assert statuses(tip, moved) == ["followed"]


def test_a_mode_on_another_file_is_not_the_tips():
    tip = "The cookie `/var/lib/rabbitmq/.erlang.cookie` must have mode 0400."
    assert statuses(tip, "chmod 0400 /root/.erlang.cookie\n") == ["absent"]
    assert statuses(tip, "chmod 0400 /var/lib/rabbitmq/.erlang.cookie\n") == ["followed"]
    assert statuses(tip, "install -m 0644 /tmp/c /var/lib/rabbitmq/.erlang.cookie\n") == ["conflict"]


def test_a_value_computed_at_run_time_says_nothing():
    tip = "Set `mode 0600` on /boot/grub2/grub.cfg."
    assert statuses(tip, "chmod u-x,go-rwx /boot/grub2/grub.cfg\n") == ["absent"]


def test_doing_what_the_tip_forbids_is_evidence_of_ignoring_it():
    tip = "Never use `no_root_squash` on NFS exports; keep the default `root_squash`."
    does = "echo '/srv/backup 10.12.0.0/22(rw,sync,no_root_squash)' >> /etc/exports\nexportfs -ra\n"
    avoids = "sed -i 's/no_root_squash/root_squash/' /etc/exports\nexportfs -ra\n"
    assert features(tip, does)[0]["forbidden_done"] == 1.0
    assert features(tip, avoids)[0]["forbidden_done"] == 0.0


def test_a_prescribed_command_needs_its_subcommand_and_flags():
    tip = "Enable the unit with `systemctl enable --now chronyd`."
    assert features(tip, "systemctl enable --now chronyd\n")[0]["command_followed"] == 1.0
    assert features(tip, "systemctl enable chronyd\n")[0]["command_followed"] == 0.0
    assert features(tip, "systemctl status chronyd\n")[0]["command_followed"] == 0.0


def test_steps_in_code_that_never_runs_count_for_nothing():
    script = "if false; then\n  echo 'PermitRootLogin no' >> /etc/ssh/sshd_config\nfi\n"
    values, found = features(SSH_TIP, script)
    assert found["settings"] == [["PermitRootLogin", "no", "absent"]]
    assert values["comparable"] == 0.0


# --- nothing to compare: the cosine decides --------------------------------------------------------

def test_with_nothing_of_the_tip_in_the_script_the_cosine_decides():
    tip = "Set `PermitRootLogin no` in /etc/ssh/sshd_config."
    unrelated = agreement(extract_tip(tip), extract_script("apt-get install -y chrony\n")).values
    assert nothing_to_compare(unrelated)
    low, high = (DEFAULT.probability_of(design_values(unrelated, c)) for c in (0.2, 0.8))
    assert low < high  # the fallback follows the cosine
    design = design_values(unrelated, 0.8)
    assert all(design[name] == 0.0 for name in ("prescribed_share", "setting_followed", "comparable"))
    writes = "echo 'PermitRootLogin no' >> /etc/ssh/sshd_config\n"
    related = agreement(extract_tip(tip), extract_script(writes)).values
    assert not nothing_to_compare(related)
    assert design_values(related, 0.8)["cosine_fallback"] == 0.0


def test_a_restart_where_the_tip_says_reload_is_the_forbidden_approach():
    tip = ("Apply PgBouncer config changes with `RELOAD;` on the admin console (or SIGHUP / "
           "`systemctl reload pgbouncer`), not a restart, which drops every client connection.")
    edit = "sed -i 's/^max_client_conn.*/max_client_conn = 500/' /etc/pgbouncer/pgbouncer.ini\n"
    restarts = edit + "systemctl restart pgbouncer\n"
    reloads = edit + "systemctl reload pgbouncer\n"
    other = "systemctl restart postgresql\n"  # another service's restart is not this tip's
    assert features(tip, restarts)[0]["forbidden_done"] == 1.0
    assert features(tip, reloads)[0]["forbidden_done"] == 0.0
    assert features(tip, other)[0]["forbidden_done"] == 0.0
    plain = "Restart pgbouncer after changing pgbouncer.ini so the new limits apply."
    assert features(plain, restarts)[0]["forbidden_done"] == 0.0
