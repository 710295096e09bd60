"""Tests for ctxgraph.follow_signal.shell: what a fix script runs, writes and sets (tree-sitter-bash)."""

import logging
import time

import pytest

from ctxgraph.follow_signal.shell import (
    PARSER_VERSION,
    Command,
    FileWrite,
    Setting,
    content_settings,
    normal_key,
    read_script,
)


def kv(settings):
    """(key, value, file, how) of each setting, the fields most tests pin."""
    return [(s.key, s.value, s.file, s.how) for s in settings]


def cmd(facts, name):
    found = [c for c in facts.commands if c.name == name]
    assert len(found) == 1, found
    return found[0]


# --- settings from content written to a file ------------------------------------------------------

def test_heredoc_cat_redirect_before_heredoc():
    f = read_script("cat > /etc/sysctl.d/99-hard.conf <<EOF\n# hardening\nnet.ipv4.ip_forward = 0\n"
                    "kernel.kptr_restrict=2\nEOF\n")
    assert kv(f.settings) == [("net.ipv4.ip_forward", "0", "/etc/sysctl.d/99-hard.conf", "heredoc"),
                              ("kernel.kptr_restrict", "2", "/etc/sysctl.d/99-hard.conf", "heredoc")]
    assert [s.line for s in f.settings] == [3, 4]  # the heredoc's own lines
    assert f.files_written == [FileWrite("/etc/sysctl.d/99-hard.conf", "redirect", 1,
                                         "# hardening\nnet.ipv4.ip_forward = 0\nkernel.kptr_restrict=2\n",
                                         True)]


def test_heredoc_cat_heredoc_before_redirect():
    f = read_script("cat <<EOF > /etc/ssh/sshd_config.d/10-root.conf\nPermitRootLogin no\nEOF\n")
    assert kv(f.settings) == [("PermitRootLogin", "no", "/etc/ssh/sshd_config.d/10-root.conf", "heredoc")]


def test_heredoc_quoted_delimiter_piped_to_sudo_tee_keeps_text_literal():
    f = read_script("X=1\ncat <<'EOF' | sudo tee /etc/app.conf >/dev/null\nvalue = $X\nEOF\n")
    assert kv(f.settings) == [("value", "$X", "/etc/app.conf", "heredoc")]
    assert [(w.path, w.how) for w in f.files_written] == [("/etc/app.conf", "tee")]


def test_heredoc_unquoted_expands_known_variables():
    f = read_script("PORT=2222\ncat > /etc/ssh/sshd_config.d/port.conf <<EOF\n"
                    "Port $PORT\nHome ${HOME}\nEOF\n")
    assert kv(f.settings) == [("Port", "2222", "/etc/ssh/sshd_config.d/port.conf", "heredoc"),
                              ("Home", "${HOME}", "/etc/ssh/sshd_config.d/port.conf", "heredoc")]


def test_heredoc_dash_strips_tabs_and_appends():
    f = read_script("setup() {\n\tcat >> /etc/security/limits.conf <<-EOF\n"
                    "\t* hard core 0\n\tMaxAuthTries 3\n"
                    "\tEOF\n}\nsetup\n")
    assert kv(f.settings) == [("MaxAuthTries", "3", "/etc/security/limits.conf", "heredoc")]
    assert f.files_written[0].how == "append"
    assert f.files_written[0].content == "* hard core 0\nMaxAuthTries 3\n"


def test_heredoc_followed_by_list_and_pipeline_on_the_same_line():
    f = read_script("cat <<EOF > /etc/f.conf && systemctl restart app\nk = v\nEOF\n"
                    "cat <<'EOF' | sudo tee /etc/g.conf > /dev/null && echo done\nk2 = v2\nEOF\n"
                    "touch /after\n")
    assert kv(f.settings) == [("k", "v", "/etc/f.conf", "heredoc"),
                              ("k2", "v2", "/etc/g.conf", "heredoc")]
    assert f.runs("systemctl", "restart")
    assert [(w.path, w.line) for w in f.files_written] == [
        ("/etc/f.conf", 1), ("/etc/g.conf", 4), ("/after", 7)]


def test_tee_fed_by_heredoc():
    f = read_script("sudo tee /etc/modprobe.d/usb.conf <<EOF >/dev/null\n"
                    "install usb-storage /bin/true\nEOF\n")
    assert kv(f.settings) == [("install", "usb-storage /bin/true", "/etc/modprobe.d/usb.conf", "heredoc")]


def test_echo_append_to_file():
    f = read_script('echo "PermitRootLogin no" >> /etc/ssh/sshd_config\n')
    assert kv(f.settings) == [("PermitRootLogin", "no", "/etc/ssh/sshd_config", "echo")]
    assert f.files_written == [FileWrite("/etc/ssh/sshd_config", "append", 1, "PermitRootLogin no\n", True)]


def test_printf_fills_format_and_splits_lines():
    f = read_script("printf '%s\\n' 'a = 1' \"b = 2\" > /etc/x.conf\n")
    assert kv(f.settings) == [("a", "1", "/etc/x.conf", "printf"), ("b", "2", "/etc/x.conf", "printf")]
    assert [s.line for s in f.settings] == [1, 1]


def test_echo_e_interprets_line_breaks():
    f = read_script("echo -e 'a=1\\nb=2' > /etc/e.conf\necho 'c=3\\nd=4' > /etc/plain.conf\n")
    assert [(s.key, s.value, s.file) for s in f.settings] == [
        ("a", "1", "/etc/e.conf"), ("b", "2", "/etc/e.conf"), ("c", "3\\nd=4", "/etc/plain.conf")]


def test_printf_piped_into_sudo_tee():
    f = read_script("printf 'net.ipv6.conf.all.disable_ipv6 = %d\\n' 1 | sudo tee /etc/sysctl.d/ipv6.conf\n")
    assert kv(f.settings) == [("net.ipv6.conf.all.disable_ipv6", "1", "/etc/sysctl.d/ipv6.conf", "printf")]


def test_here_string_into_tee():
    f = read_script('tee /etc/profile.d/tmout.sh <<< "TMOUT=900"\n')
    assert kv(f.settings) == [("TMOUT", "900", "/etc/profile.d/tmout.sh", "here-string")]
    assert f.files_written[0].how == "tee"


def test_echo_piped_into_tee_append():
    f = read_script("echo 'maxmemory 2gb' | tee -a /etc/redis/redis.conf > /dev/null\n")
    assert kv(f.settings) == [("maxmemory", "2gb", "/etc/redis/redis.conf", "echo")]
    assert [(w.path, w.how, w.content) for w in f.files_written] == [
        ("/etc/redis/redis.conf", "tee-append", "maxmemory 2gb\n")]


def test_block_of_echos_redirected():
    f = read_script("{ echo 'a=1'; printf 'b=%s\\n' 2; } > /etc/ab.conf\n")
    assert kv(f.settings) == [("a", "1", "/etc/ab.conf", "echo"), ("b", "2", "/etc/ab.conf", "echo")]


def test_for_loop_over_literal_values_runs_body_per_value():
    f = read_script("for k in rsh telnet; do systemctl disable \"$k\"; done\n")
    assert kv(f.settings) == [("rsh", "disabled", None, "tool:systemctl"),
                              ("telnet", "disabled", None, "tool:systemctl")]


def test_ini_sections_and_directives():
    f = read_script("cat > /etc/my.cnf <<EOF\n[mysqld]\nbind-address = 127.0.0.1\nlocal_infile=0\n"
                    "[client]\nport: 3306\nEOF\n")
    assert [(s.key, s.value, s.section) for s in f.settings] == [
        ("bind-address", "127.0.0.1", "mysqld"), ("local_infile", "0", "mysqld"), ("port", "3306", "client")]


def test_nginx_block_directives_lose_semicolon_and_braces_are_skipped():
    f = read_script("cat > /etc/nginx/conf.d/tls.conf <<'EOF'\nserver {\n    ssl_protocols TLSv1.2 TLSv1.3;\n"
                    "    server_tokens   off;\n}\nEOF\n")
    assert kv(f.settings) == [("ssl_protocols", "TLSv1.2 TLSv1.3", "/etc/nginx/conf.d/tls.conf", "heredoc"),
                              ("server_tokens", "off", "/etc/nginx/conf.d/tls.conf", "heredoc")]


def test_proc_sys_write_is_the_dotted_setting():
    f = read_script("echo 0 > /proc/sys/net/ipv4/ip_forward\nsysctl -w net.ipv4.ip_forward=0\n")
    assert kv(f.settings_of("net.ipv4.ip_forward")) == [
        ("net.ipv4.ip_forward", "0", "/proc/sys/net/ipv4/ip_forward", "echo"),
        ("net.ipv4.ip_forward", "0", None, "tool:sysctl")]
    assert len(f.settings_of("/proc/sys/net/ipv4/ip_forward")) == 2
    assert len(f.settings_of("net/ipv4/ip_forward")) == 2


def test_normal_key_and_settings_of_are_case_and_separator_blind():
    assert normal_key("/proc/sys/net/ipv4/ip_forward") == "net.ipv4.ip.forward"
    assert normal_key("Net_IPv4-ip/forward") == normal_key("net.ipv4.ip_forward")
    assert normal_key("PermitRootLogin") == "permitrootlogin"
    f = read_script("gsettings set org.gnome.desktop.screensaver lock-enabled true\n")
    assert len(f.settings_of("org.gnome.desktop.screensaver.lock_enabled")) == 1
    assert f.settings_of("org.gnome.desktop.screensaver.lock-delay") == []


def test_content_settings_skips_what_is_not_a_setting():
    text = "# PermitRootLogin yes\n; old = 1\n\nlonely\n}\n<Directory /var/www>\nAllowUsers alice bob\nkey=\n"
    got = content_settings(text, "/etc/f", "heredoc", 10)
    assert [(s.key, s.value, s.line) for s in got] == [("AllowUsers", "alice bob", 16), ("key", "", 17)]


def test_content_settings_reads_sql_statements():
    got = content_settings("ALTER SYSTEM SET ssl = 'on';\nSELECT 1;\n", None, "heredoc", 1)
    assert kv(got) == [("ssl", "on", None, "tool:sql")]


def test_content_settings_of_a_shell_script_only_reads_assignments():
    got = content_settings("#!/bin/sh\nset -e\nexport TMOUT=600\nreadonly TMOUT\n", "/etc/profile.d/t.sh",
                           "heredoc", 1)
    assert [(s.key, s.value) for s in got] == [("TMOUT", "600")]


# --- sed ------------------------------------------------------------------------------------------

def test_sed_replace_with_optional_comment_anchor():
    f = read_script("sed -i 's/^#\\?PermitRootLogin.*/PermitRootLogin no/' /etc/ssh/sshd_config\n")
    assert kv(f.settings) == [("PermitRootLogin", "no", "/etc/ssh/sshd_config", "sed")]
    assert f.files_written == [FileWrite("/etc/ssh/sshd_config", "sed-i", 1, None, True)]


def test_sed_other_delimiter_and_whitespace_class():
    f = read_script("sed -i 's|^[[:space:]]*#*[[:space:]]*Port .*|Port 2222|' /etc/ssh/sshd_config\n")
    assert kv(f.settings) == [("Port", "2222", "/etc/ssh/sshd_config", "sed")]


def test_sed_backref_to_literal_group():
    f = read_script("sed -i 's/^\\(MaxAuthTries\\s*\\).*/\\14/; "
                    "s/^\\(ClientAliveInterval\\).*/\\1 300/' /etc/ssh/sshd_config\n")
    assert [(s.key, s.value) for s in f.settings] == [("MaxAuthTries", "4"), ("ClientAliveInterval", "300")]


def test_sed_extended_regex_group():
    f = read_script("sed -E -i 's/^(max_log_file_action)\\s*=.*/\\1 = keep_logs/' /etc/audit/auditd.conf\n")
    assert kv(f.settings) == [("max_log_file_action", "keep_logs", "/etc/audit/auditd.conf", "sed")]


def test_sed_backref_to_wildcard_group_is_skipped():
    f = read_script("sed -i 's/^\\(GRUB_CMDLINE_LINUX=\".*\\)\"/\\1 audit=1\"/' /etc/default/grub\n")
    assert f.settings == []
    assert f.writes("/etc/default/grub")[0].how == "sed-i"


def test_sed_comment_out_is_removed():
    f = read_script("sed -i 's/^PermitEmptyPasswords/#PermitEmptyPasswords/' /etc/ssh/sshd_config\n"
                    "sed -i 's/^\\(X11Forwarding\\)/#\\1/' /etc/ssh/sshd_config\n"
                    "sed -i 's/^UsePAM yes/# &/' /etc/ssh/sshd_config\n")
    assert [(s.key, s.value, s.removed) for s in f.settings] == [
        ("PermitEmptyPasswords", "", True), ("X11Forwarding", "", True), ("UsePAM", "yes", True)]


def test_sed_delete_is_removed():
    f = read_script("sed -i '/^Banner/d' /etc/ssh/sshd_config\n")
    assert f.settings == [Setting("Banner", "", "/etc/ssh/sshd_config", "sed", 1, None, True, True)]


def test_sed_append_and_insert():
    f = read_script("sed -i '$a ClientAliveCountMax 0' /etc/ssh/sshd_config\n"
                    "sed -i '/^\\[mysqld\\]/a local_infile = 0' /etc/my.cnf\n"
                    "sed -i '/^# Ciphers/i Ciphers aes256-ctr' /etc/ssh/sshd_config\n")
    assert [(s.key, s.value, s.file, s.how, s.section) for s in f.settings] == [
        ("ClientAliveCountMax", "0", "/etc/ssh/sshd_config", "sed-append", None),
        ("local_infile", "0", "/etc/my.cnf", "sed-append", "mysqld"),
        ("Ciphers", "aes256-ctr", "/etc/ssh/sshd_config", "sed-append", None)]


def test_sed_classic_append_with_backslash_newline():
    f = read_script("sed -i '/^#Protocol/a\\\nProtocol 2' /etc/ssh/sshd_config\n")
    assert kv(f.settings) == [("Protocol", "2", "/etc/ssh/sshd_config", "sed-append")]


def test_sed_change_command_and_double_quoted_script_with_variable():
    f = read_script("sed -i '/^PermitRootLogin/c\\PermitRootLogin no' /etc/ssh/sshd_config\n"
                    "VAL=3\nsed -i \"s/^MaxAuthTries.*/MaxAuthTries $VAL/\" /etc/ssh/sshd_config\n")
    assert [(s.key, s.value, s.how) for s in f.settings] == [("PermitRootLogin", "no", "sed"),
                                                             ("MaxAuthTries", "3", "sed")]


def test_sed_semicolon_inside_replacement_and_several_expressions():
    f = read_script("sed -i -e 's/^ssl_protocols.*/ssl_protocols TLSv1.2;/' -e '/^server_tokens/d' "
                    "/etc/nginx/nginx.conf\n")
    assert [(s.key, s.value, s.removed) for s in f.settings] == [("ssl_protocols", "TLSv1.2", False),
                                                                  ("server_tokens", "", True)]


def test_sed_in_place_suffix_forms():
    f = read_script("sed -i.bak 's/^a=.*/a=2/' /etc/one.conf\n"
                    "sed --in-place=.orig -e 's/^b=.*/b=3/' /etc/two.conf\n"
                    "sed -ri 's/^c\\s+.*/c 4/' /etc/three.conf\n")
    assert kv(f.settings) == [("a", "2", "/etc/one.conf", "sed"), ("b", "3", "/etc/two.conf", "sed"),
                              ("c", "4", "/etc/three.conf", "sed")]
    assert cmd(read_script("sed -i.bak 's/a/b/' f\n"), "sed").flags == frozenset({"-i"})


def test_sed_address_then_substitution_of_the_value():
    f = read_script("sed -i '/^PermitRootLogin/s/yes/no/' /etc/ssh/sshd_config\n")
    assert kv(f.settings) == [("PermitRootLogin", "no", "/etc/ssh/sshd_config", "sed")]


def test_sed_without_in_place_lands_where_its_output_goes():
    f = read_script("sed 's/^Key .*/Key new/' /etc/app.orig > /etc/app.conf\n"
                    "sed 's/^x=.*/x=1/' /etc/b.orig | sudo tee /etc/b.conf\n"
                    "sed 's/^y=.*/y=1/' /etc/c.conf\n")
    assert kv(f.settings) == [("Key", "new", "/etc/app.conf", "sed"), ("x", "1", "/etc/b.conf", "sed")]


def test_perl_in_place_substitution_reads_like_sed():
    f = read_script("perl -i.bak -pe 's/^(Port)\\s.*/$1 2222/' /etc/ssh/sshd_config\n"
                    "perl -ne 'print if /PermitRootLogin/' /etc/ssh/sshd_config\n")
    assert kv(f.settings) == [("Port", "2222", "/etc/ssh/sshd_config", "perl")]
    assert [(w.path, w.how) for w in f.files_written] == [("/etc/ssh/sshd_config", "perl-i")]


# --- tool setters ---------------------------------------------------------------------------------

def test_sysctl_pairs_and_stdin():
    f = read_script('sysctl -w net.ipv4.conf.all.rp_filter=1 kernel.kptr_restrict="2"\nsysctl kernel.x\n'
                    "echo 'vm.swappiness = 10' | sudo sysctl -p -\n")
    assert kv(f.settings) == [("net.ipv4.conf.all.rp_filter", "1", None, "tool:sysctl"),
                              ("kernel.kptr_restrict", "2", None, "tool:sysctl"),
                              ("vm.swappiness", "10", None, "tool:sysctl")]


def test_setsebool_pairs_and_semanage_boolean():
    f = read_script("setsebool -P httpd_can_network_connect 1 ftp_home_dir=off\n"
                    "semanage boolean -m --on httpd_enable_cgi\nsemanage boolean -m -0 nis_enabled\n")
    assert kv(f.settings) == [("httpd_can_network_connect", "1", None, "tool:setsebool"),
                              ("ftp_home_dir", "off", None, "tool:setsebool"),
                              ("httpd_enable_cgi", "on", None, "tool:semanage"),
                              ("nis_enabled", "off", None, "tool:semanage")]


def test_systemctl_unit_states_but_not_restart():
    f = read_script("systemctl --now enable sshd.service\n"
                    "systemctl disable --now telnet.socket avahi-daemon\n"
                    "systemctl mask ctrl-alt-del.target\nsystemctl restart sshd\n"
                    "systemctl set-default multi-user.target\n")
    assert [(s.key, s.value) for s in f.settings] == [
        ("sshd", "enabled"), ("telnet.socket", "disabled"), ("avahi-daemon", "disabled"),
        ("ctrl-alt-del.target", "masked"), ("default-target", "multi-user.target")]
    assert {s.how for s in f.settings} == {"tool:systemctl"}


def test_gsettings_dconf_crudini_git_postconf():
    f = read_script("gsettings set org.gnome.desktop.screensaver lock-delay \"uint32 0\"\n"
                    "dconf write /org/gnome/login-screen/disable-user-list true\n"
                    "crudini --set /etc/nova/nova.conf DEFAULT debug false\n"
                    "git config --global core.autocrlf input\n"
                    "postconf -e 'inet_interfaces = loopback-only' smtpd_tls_security_level=may\n")
    assert [(s.key, s.value, s.file, s.how, s.section) for s in f.settings] == [
        ("org.gnome.desktop.screensaver.lock-delay", "uint32 0", None, "tool:gsettings", None),
        ("/org/gnome/login-screen/disable-user-list", "true", None, "tool:dconf", None),
        ("debug", "false", "/etc/nova/nova.conf", "tool:crudini", "DEFAULT"),
        ("core.autocrlf", "input", None, "tool:git", None),
        ("inet_interfaces", "loopback-only", None, "tool:postconf", None),
        ("smtpd_tls_security_level", "may", None, "tool:postconf", None)]
    assert [(w.path, w.how) for w in f.files_written] == [("/etc/nova/nova.conf", "tool")]


def test_chmod_chown_chgrp_are_settings_not_writes():
    f = read_script("chmod 0600 /etc/ssh/sshd_config /etc/ssh/key\nchown -R root:root /etc/cron.d\n"
                    "chgrp wheel /usr/bin/su\nchmod go-w /etc/passwd\n")
    assert kv(f.settings) == [("mode", "0600", "/etc/ssh/sshd_config", "tool:chmod"),
                              ("mode", "0600", "/etc/ssh/key", "tool:chmod"),
                              ("owner", "root:root", "/etc/cron.d", "tool:chown"),
                              ("group", "wheel", "/usr/bin/su", "tool:chgrp"),
                              ("mode", "go-w", "/etc/passwd", "tool:chmod")]
    assert f.files_written == []


def test_policy_tools():
    f = read_script("update-crypto-policies --set FUTURE\ntimedatectl set-ntp true\n"
                    "timedatectl set-timezone UTC\n"
                    "ufw default deny incoming\nfirewall-cmd --set-default-zone=drop\n"
                    "authselect select sssd with-faillock --force\n")
    assert kv(f.settings) == [("crypto-policy", "FUTURE", None, "tool:update-crypto-policies"),
                              ("ntp", "true", None, "tool:timedatectl"),
                              ("timezone", "UTC", None, "tool:timedatectl"),
                              ("default incoming", "deny", None, "tool:ufw"),
                              ("default-zone", "drop", None, "tool:firewall-cmd"),
                              ("authselect profile", "sssd with-faillock", None, "tool:authselect")]


def test_container_env_settings():
    f = read_script("kubectl set env deployment/web LOG_LEVEL=debug OLD-\n"
                    "docker run -e A=1 --env B=2 --env=C=3 nginx\n")
    assert [(s.key, s.value, s.how, s.removed) for s in f.settings] == [
        ("LOG_LEVEL", "debug", "tool:kubectl", False), ("OLD", "", "tool:kubectl", True),
        ("A", "1", "tool:env", False), ("B", "2", "tool:env", False), ("C", "3", "tool:env", False)]


def test_sql_through_sudo_psql_c():
    f = read_script("sudo -u postgres psql -c \"ALTER SYSTEM SET log_connections TO 'on'\"\n")
    assert kv(f.settings) == [("log_connections", "on", None, "tool:sql")]
    assert cmd(f, "psql").words == ("-c", "ALTER SYSTEM SET log_connections TO 'on'")


def test_sql_heredoc_into_psql():
    f = read_script("sudo -u postgres psql <<SQL\nALTER SYSTEM SET ssl = on;\n"
                    "ALTER DATABASE app SET statement_timeout = '5s';\n"
                    "ALTER ROLE bob SET work_mem TO '64MB';\nSQL\n")
    assert [(s.key, s.value, s.how, s.line) for s in f.settings] == [
        ("ssl", "on", "tool:sql", 2), ("statement_timeout", "5s", "tool:sql", 3),
        ("work_mem", "64MB", "tool:sql", 4)]


def test_mysql_bare_p_does_not_swallow_execute():
    f = read_script("mysql -u root -p -e \"SET GLOBAL max_connections = 500; SET PERSIST local_infile=0\"\n")
    assert kv(f.settings) == [("max_connections", "500", None, "tool:sql"),
                              ("local_infile", "0", None, "tool:sql")]


def test_redis_config_set():
    f = read_script("redis-cli -h 127.0.0.1 -p 6379 CONFIG SET maxmemory 2gb\n")
    assert kv(f.settings) == [("maxmemory", "2gb", None, "tool:redis")]


def test_export_at_top_level_is_env_but_not_in_a_function():
    f = read_script("export TMOUT=900\nf() { export HISTSIZE=10; }\nf\n")
    assert kv(f.settings) == [("TMOUT", "900", None, "env")]


def test_install_mode_and_owner_are_settings_on_the_destination():
    f = read_script("install -m 0440 -o root -g root sudoers.tmp /etc/sudoers.d/90-x\n")
    assert kv(f.settings) == [("mode", "0440", "/etc/sudoers.d/90-x", "tool:install"),
                              ("owner", "root", "/etc/sudoers.d/90-x", "tool:install"),
                              ("group", "root", "/etc/sudoers.d/90-x", "tool:install")]


# --- commands, subcommands, flags, wrappers -------------------------------------------------------

def test_systemctl_subcommand_after_leading_option():
    c = cmd(read_script("systemctl --now enable sshd\n"), "systemctl")
    assert (c.subcommand, c.flags, c.words) == ("enable", frozenset({"--now"}), ("--now", "enable", "sshd"))


def test_short_clusters_split_and_long_option_values_dropped():
    f = read_script("usermod -aG wheel bob\ninstall --mode=0600 a /etc/b\n")
    assert cmd(f, "usermod").flags == frozenset({"-a", "-G"})
    assert cmd(f, "usermod").subcommand == "wheel"
    assert cmd(f, "install").flags == frozenset({"--mode"})


def test_double_dash_ends_options():
    c = cmd(read_script("grep -q -- -x /etc/f\n"), "grep")
    assert c.flags == frozenset({"-q"})
    assert c.subcommand == "-x"


def test_command_fields():
    f = read_script("if true; then\n  sudo   /usr/sbin/sshd   -t\nfi\n")
    assert cmd(f, "sshd") == Command("sshd", ("-t",), None, frozenset({"-t"}), 2, None, True,
                                     "sudo /usr/sbin/sshd -t")


@pytest.mark.parametrize("line", [
    "sudo -u postgres -H systemctl restart sshd",
    "env -i PATH=/bin LANG=C systemctl restart sshd",
    "timeout -s KILL 30 systemctl restart sshd",
    "nice -n 5 nohup systemctl restart sshd",
    "command systemctl restart sshd",
    "exec systemctl restart sshd",
    "chroot /mnt systemctl restart sshd",
    "doas -u root stdbuf -oL ionice -c 3 systemctl restart sshd",
    "echo sshd | xargs -r -n1 systemctl restart",
    "time systemctl restart sshd",
    "runuser -u root -- systemctl restart sshd",
])
def test_wrappers_are_stripped(line):
    f = read_script(line + "\n")
    assert f.runs("systemctl", "restart")
    assert not any(c.name in ("sudo", "env", "timeout", "nice", "nohup", "chroot", "doas", "xargs", "runuser")
                   for c in f.commands)


def test_command_v_is_a_lookup_not_a_run():
    f = read_script("command -v sshd >/dev/null\n")
    assert not f.runs("sshd")
    assert f.runs("command", flags=["-v"])


def test_commands_in_every_kind_of_place():
    f = read_script("x=$(hostname)\n(cd /tmp && make)\n"
                    "if grep -q a /f; then b1; elif c1; then b2; else b3; fi\n"
                    "while read l; do b4; done < /f\ncase $x in a) b5;; *) b6;; esac\n! b7 | b8\n")
    assert {c.name for c in f.commands} == {"hostname", "cd", "make", "grep", "b1", "c1", "b2", "b3", "read",
                                            "b4", "b5", "b6", "b7", "b8"}


def test_message_text_is_not_commands_nor_settings():
    f = read_script('echo "Run: systemctl restart sshd and set PermitRootLogin no"\nlogger "sysctl -w a=1"\n'
                    "# PermitRootLogin yes\n# systemctl restart sshd\n")
    assert {c.name for c in f.commands} == {"echo", "logger"}
    assert f.settings == [] and f.files_written == []


def test_runs_filters():
    f = read_script("systemctl enable --now auditd\n")
    assert f.runs("systemctl", "enable", ["--now"])
    assert f.runs("/usr/bin/systemctl")
    assert not f.runs("systemctl", "disable")
    assert not f.runs("systemctl", flags=["--now", "-q"])


# --- nested scripts -------------------------------------------------------------------------------

def test_ssh_remote_command_is_read():
    f = read_script('ssh -p 2222 -o StrictHostKeyChecking=no admin@db "systemctl restart postgresql"\n')
    c = cmd(f, "systemctl")
    assert (c.subcommand, c.words, c.line) == ("restart", ("restart", "postgresql"), 1)


def test_ssh_with_script_on_stdin():
    f = read_script("ssh -i key host bash -s <<'EOF'\n"
                    "echo 'PermitRootLogin no' >> /etc/ssh/sshd_config\nEOF\n")
    assert kv(f.settings) == [("PermitRootLogin", "no", "/etc/ssh/sshd_config", "echo")]
    assert f.settings[0].line == 1


def test_bash_c_and_sudo_sh_c():
    f = read_script("bash -c 'echo \"MaxAuthTries 3\" >> /etc/ssh/sshd_config'\n"
                    "sudo sh -c \"sysctl -w kernel.dmesg_restrict=1\"\n")
    assert [(s.key, s.value, s.line) for s in f.settings] == [("MaxAuthTries", "3", 1),
                                                               ("kernel.dmesg_restrict", "1", 2)]


def test_su_runuser_eval_and_xargs_sh_c():
    f = read_script("su - postgres -c \"psql -c 'ALTER SYSTEM SET wal_level = replica'\"\n"
                    "runuser -l app -c 'touch /srv/app/ready'\n"
                    "eval \"setsebool -P ftpd_full_access off\"\n"
                    "ls /etc/cron.d/* | xargs -I{} sh -c 'chmod 600 {}'\n")
    assert kv(f.settings) == [("wal_level", "replica", None, "tool:sql"),
                              ("ftpd_full_access", "off", None, "tool:setsebool"),
                              ("mode", "600", "{}", "tool:chmod")]
    assert f.writes("/srv/app/ready")[0].how == "touch"


def test_echo_piped_into_sh_is_a_script():
    f = read_script("echo 'systemctl enable --now auditd' | sh\n")
    assert kv(f.settings) == [("auditd", "enabled", None, "tool:systemctl")]


def test_find_exec_runs_its_command_on_the_searched_paths():
    f = read_script("find /etc/ssh/sshd_config.d -name '*.conf' "
                    "-exec sed -i 's/^X11Forwarding.*/X11Forwarding no/' {} +\n")
    assert kv(f.settings) == [("X11Forwarding", "no", "/etc/ssh/sshd_config.d/*.conf", "sed")]
    assert len(f.writes("/etc/ssh/sshd_config.d/50-cloud.conf")) == 1


def test_nesting_is_capped():
    deep = "bash -c 'touch /a'"
    for _ in range(6):
        deep = "bash -c " + repr(deep).replace("\\'", "'\"'\"'")
    f = read_script(deep + "\n")
    assert f.files_written == []  # seven levels down is past the cap


# --- variables ------------------------------------------------------------------------------------

def test_variable_expansion_in_later_words():
    f = read_script("CONF=/etc/ssh/sshd_config\n"
                    "sed -i 's/^#\\?PermitRootLogin.*/PermitRootLogin no/' \"$CONF\"\n"
                    "echo 'Banner none' >> ${CONF}\n")
    assert [(s.key, s.file) for s in f.settings] == [("PermitRootLogin", "/etc/ssh/sshd_config"),
                                                     ("Banner", "/etc/ssh/sshd_config")]


def test_declarations_and_defaults_expand():
    f = read_script("readonly DIR=/etc/sysctl.d\ndeclare -r NAME=99-x.conf\nF=\"$DIR/$NAME\"\n"
                    "echo 'a=1' > \"$F\"\necho 'b=2' > \"${OUT:-/etc/default.conf}\"\n")
    assert [w.path for w in f.files_written] == ["/etc/sysctl.d/99-x.conf", "/etc/default.conf"]


def test_computed_variables_stay_as_written():
    f = read_script("CONF=/etc/a\nCONF=$(mktemp)\necho x > \"$CONF\"\nARR=(a b)\necho y > $ARR\n")
    assert [w.path for w in f.files_written] == ["$CONF", "$ARR"]


def test_function_sees_variables_set_before_its_first_call():
    f = read_script("harden() { sed -i 's/^a=.*/a=1/' \"$CONF\"; }\nCONF=/etc/app.conf\nharden\n")
    assert f.settings[0].file == "/etc/app.conf"


def test_local_assignment_in_function():
    f = read_script("f() {\n  local target=/etc/f.conf\n  echo 'k=v' > \"$target\"\n}\nf\n")
    assert [(w.path, w.reachable) for w in f.files_written] == [("/etc/f.conf", True)]


# --- files written --------------------------------------------------------------------------------

def test_file_writers():
    f = read_script("cp -a /tmp/sshd_config /etc/ssh/sshd_config\nmv new.conf /etc/app/\n"
                    "install -d -m 0750 /etc/app/conf.d\nmkdir -p /var/log/app\n"
                    "ln -sf /dev/null /etc/systemd/system/x.service\ntouch /etc/cron.allow\n"
                    "dd if=/dev/zero of=/swapfile bs=1M count=1\ntruncate -s 0 /var/log/wtmp\n"
                    "cp -t /etc/dir a b\n")
    assert [(w.path, w.how) for w in f.files_written] == [
        ("/etc/ssh/sshd_config", "cp"), ("/etc/app/", "mv"), ("/etc/app/conf.d", "mkdir"),
        ("/var/log/app", "mkdir"),
        ("/etc/systemd/system/x.service", "ln"), ("/etc/cron.allow", "touch"), ("/swapfile", "dd"),
        ("/var/log/wtmp", "truncate"), ("/etc/dir", "cp")]


def test_redirects_that_are_not_files():
    f = read_script("echo err >&2\nmake 2>&1 >/dev/null\necho x > /dev/stderr\ncmd &> /var/log/cmd.log\n"
                    "cmd 2> /tmp/err\n")
    assert [(w.path, w.how, w.content) for w in f.files_written] == [
        ("/var/log/cmd.log", "redirect", None), ("/tmp/err", "redirect", None)]


def test_writes_by_directory_prefix_and_glob():
    f = read_script("echo 'a=1' > /etc/sysctl.d/99-x.conf\necho 'b=1' > /etc/sysctl.conf\n")
    assert [w.path for w in f.writes("/etc/sysctl.d/")] == ["/etc/sysctl.d/99-x.conf"]
    assert [w.path for w in f.writes("/etc/sysctl.d")] == ["/etc/sysctl.d/99-x.conf"]
    assert [w.path for w in f.writes("/etc/sysctl.d/*.conf")] == ["/etc/sysctl.d/99-x.conf"]
    assert [w.path for w in f.writes("/etc/sysctl.conf")] == ["/etc/sysctl.conf"]
    assert f.writes("/etc/sysctl") == []


# --- dead code ------------------------------------------------------------------------------------

def test_uncalled_function_and_its_callees_are_unreachable():
    f = read_script("unused() { echo 'c=3' >> /etc/a.conf; inner; }\ninner() { touch /tmp/inner; }\n"
                    "used() { echo 'd=4' >> /etc/a.conf; }\nused\n")
    assert f.functions == {"unused": False, "inner": False, "used": True}
    assert [(s.key, s.reachable) for s in f.settings] == [("c", False), ("d", True)]
    assert [s.key for s in f.settings_of("c", reachable_only=False)] == ["c"]
    assert f.settings_of("c") == []
    assert not f.runs("touch") and f.runs("touch", reachable_only=False)
    assert cmd(f, "touch").function == "inner"


def test_trap_and_bash_c_count_as_calls():
    f = read_script("cleanup() { rm -f /tmp/lock; }\nviabash() { touch /tmp/x; }\ntrap 'cleanup' EXIT\n"
                    "bash -c viabash\n")
    assert f.functions == {"cleanup": True, "viabash": True}
    assert f.runs("rm") and f.runs("touch")


def test_call_from_dead_code_does_not_count():
    f = read_script("f() { touch /tmp/f; }\nexit 0\nf\n")
    assert f.functions == {"f": False}
    assert f.writes("/tmp/f") == []


def test_dynamic_dispatch_calls_every_function():
    f = read_script("start() { touch /tmp/s; }\nstop() { rm /tmp/s; }\n\"$@\"\n")
    assert f.functions == {"start": True, "stop": True}


def test_constant_conditions():
    f = read_script("if false; then touch /a; fi\nif true; then touch /b; else touch /c; fi\n"
                    "while false; do touch /d; done\nuntil true; do touch /e; done\n"
                    "false && touch /f\ntrue || touch /g\nif false; then touch /h; else touch /i; fi\n")
    assert {w.path: w.reachable for w in f.files_written} == {
        "/a": False, "/b": True, "/c": False, "/d": False, "/e": False, "/f": False, "/g": False,
        "/h": False, "/i": True}


def test_code_after_top_level_exit_is_unreachable():
    f = read_script("grep -q x /f || exit 1\ntouch /alive\nif [ -n \"$A\" ]; then exit 2; fi\ntouch /alive2\n"
                    "exit 0 && touch /same-list\ntouch /dead\n")
    assert {w.path: w.reachable for w in f.files_written} == {
        "/alive": True, "/alive2": True, "/same-list": False, "/dead": False}


def test_exit_inside_function_or_subshell_does_not_end_the_script():
    f = read_script("f() { exit 1; }\n(exit 3)\nf\ntouch /still\n")
    assert f.writes("/still")[0].reachable is True


# --- messages and comments ------------------------------------------------------------------------

def test_echo_alone_is_a_message():
    f = read_script('echo "Set PermitRootLogin no in /etc/ssh/sshd_config"\n'
                    'printf "%s\\n" "net.ipv4.ip_forward=0"\n')
    assert f.settings == [] and f.files_written == []


def test_comment_yields_nothing():
    f = read_script("# PermitRootLogin yes\n# sed -i 's/a/b/' /etc/x\n#echo k=v > /etc/y\n")
    assert (f.commands, f.files_written, f.settings) == ([], [], [])


def test_crontab_and_kubectl_apply_read_stdin():
    f = read_script("echo '0 5 * * * root aide --check' | crontab -\n"
                    "kubectl apply -f - <<EOF\nkind: ConfigMap\nEOF\n")
    assert [(w.path, w.how, w.content) for w in f.files_written] == [
        ("crontab", "tool", "0 5 * * * root aide --check\n")]
    assert kv(f.settings) == [("kind", "ConfigMap", None, "tool:kubectl")]


# --- hostile input --------------------------------------------------------------------------------

HOSTILE = {
    "empty": "",
    "blank": "\n\n   \n",
    "garbage": "".join(chr((i * 7919) % 0x2FFF + 1) for i in range(200_000)),
    "bytes-ish": bytes(range(256)).decode("latin-1") * 500,
    "huge": "echo 'a = 1' >> /etc/x.conf\nsed -i 's/^b.*/b 2/' /etc/y\n" * 6000,
    "deep $(": "echo " + "$(" * 500 + "x" + ")" * 500,
    "open $(": "echo " + "$(" * 500,
    "deep (": "(" * 3000 + "x" + ")" * 3000,
    "deep if": "if true; then\n" * 1500,
    "deep lists": "a && " * 8000 + "b",
    "unbalanced quotes": "echo 'a\n" * 500 + '"' * 999,
    "unterminated heredoc": "cat <<EOF > /etc/x\nKey value\n",
    "nested bash -c": "bash -c " + "\"bash -c \\\"" * 20 + "echo x > /f",
    "nul": "echo \0 > /f\n" * 50,
    "backslashes": "\\" * 50_000,
    "loop blowup": "for a in $(seq 16); do\n" + "echo $a > /f$a\n" * 200 + "done\n",
    "loop of 16": f"for a in {' '.join(map(str, range(16)))}; do\n" + "echo $a > /f$a\n" * 200 + "done\n",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_input_returns_fast_and_quietly(name, caplog):
    caplog.set_level(logging.WARNING, logger="ctxgraph.follow_signal.shell")
    start = time.perf_counter()
    facts = read_script(HOSTILE[name])
    assert time.perf_counter() - start < 2.0
    assert isinstance(facts.parse_errors, int)
    assert caplog.records == []  # no internal error swallowed


def test_unterminated_heredoc_still_read_and_errors_counted():
    f = read_script("cat <<EOF > /etc/x\nKey value\n")
    assert f.parse_errors >= 1
    assert f.writes("/etc/x")


def test_clean_script_has_no_parse_errors_and_version_is_set():
    assert read_script("systemctl restart sshd\n").parse_errors == 0
    assert read_script("echo 'unterminated\n").parse_errors > 0
    assert PARSER_VERSION == "tree-sitter-bash-1"


def test_huge_script_keeps_head_and_tail_lines():
    body = "touch /head\n" + "true\n" * 100_000 + "touch /tail\n"
    f = read_script(body)
    assert [(w.path, w.line) for w in f.files_written] == [("/head", 1), ("/tail", 100_002)]
