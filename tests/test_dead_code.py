"""Code a script can never run is not read as following a tip.

A script that carries a tip's commands only under ``if false``, after a top-level ``exit 0`` or
behind ``false &&`` did none of them; read as code, such a script got follow probability 0.695
alone and 0.996 beside peers that do not match. The script reader drops what is certainly
unreachable before any feature is computed, and only that: whatever might run stays.
"""

from __future__ import annotations

import pytest

from ctxgraph.follow_signal import calibration as cal
from ctxgraph.follow_signal import MAX_SCRIPT_CHARS, agreement, extract_script, extract_tip

TIP = "Validate the configuration with `sshd -t` before `systemctl restart sshd`; never run `setenforce 0`."
LIVE = "#!/usr/bin/env bash\nset -euo pipefail\ncp -a /etc/ssh/sshd_config /root/sshd_config.bak\n"
STEPS = "sshd -t\nsystemctl restart sshd\n"
# The tip's other scripts, which do none of it: beside them, the dead steps read as 0.993.
PEERS = ["#!/bin/bash\necho 'nothing to do'\n", "#!/bin/bash\nsystemctl status sshd\n"]

# The tip's steps, each time in code no shell ever reaches.
DEAD = {
    "if false": "if false; then\n  sshd -t\n  systemctl restart sshd\nfi\n",
    "if false, on one line": "if false; then sshd -t; systemctl restart sshd; fi\n",
    "if false, then on its own line": "if false\nthen\n  sshd -t\n  systemctl restart sshd\nfi\n",
    "if [ 0 = 1 ]": "if [ 0 = 1 ]; then\n  sshd -t\n  systemctl restart sshd\nfi\n",
    "if [[ 1 -eq 2 ]]": "if [[ 1 -eq 2 ]]; then\n  sshd -t\n  systemctl restart sshd\nfi\n",
    "if test yes != yes": "if test 'yes' != \"yes\"; then\n  sshd -t\n  systemctl restart sshd\nfi\n",
    "if ! true": "if ! true; then\n  sshd -t\n  systemctl restart sshd\nfi\n",
    "the else of if :": "if :; then\n  echo ok\nelse\n  sshd -t\n  systemctl restart sshd\nfi\n",
    "an elif after if true": "if true; then\n  echo ok\nelif [ -f /etc/x ]; then\n  sshd -t\n  systemctl restart sshd\nfi\n",
    "elif false": "if [ -f /etc/x ]; then\n  echo ok\nelif false; then\n  sshd -t\n  systemctl restart sshd\nfi\n",
    "while false": "while false; do\n  sshd -t\n  systemctl restart sshd\ndone\n",
    "until true": "until true; do sshd -t; systemctl restart sshd; done\n",
    "false &&": "false && sshd -t && systemctl restart sshd\n",
    "false && across lines": "false &&\n  sshd -t &&\n  systemctl restart sshd\n",
    "true || a group": "true || {\n  sshd -t\n  systemctl restart sshd\n}\n",
    "nested in a dead block": "if false; then\n  if [ -f /etc/x ]; then\n    sshd -t\n  fi\n  systemctl restart sshd\nfi\n",
    "a function defined in dead code": "if false; then\n  apply() { sshd -t; systemctl restart sshd; }\nfi\napply\n",
    "after exit 0": "exit 0\n" + STEPS,
    "after a bare exit": "exit\n" + STEPS,
    "after exit on the same line": "exit 0; sshd -t; systemctl restart sshd\n",
    "a heredoc and a function after exit": "exit 0\napply() {\n  sshd -t\n}\ncat > /etc/x.sh <<'EOF'\n"
                                            "systemctl restart sshd\nEOF\napply\n",
    "after exit 0 with a heredoc before": "cat > /etc/motd <<EOF\nhello\nEOF\nexit 0\n" + STEPS,
    "after exit 0 with a case before": 'case "$1" in\n  -h) echo usage; exit 0 ;;\n  *) ;;\nesac\nexit 0\n' + STEPS,
}

# The same steps where they may run: each stays code.
LIVE_FORMS = {
    "a condition read at run time": 'if [ "$FORCE" = 1 ]; then\n  sshd -t\n  systemctl restart sshd\nfi\n',
    "the then of if true": "if true; then\n  sshd -t\n  systemctl restart sshd\nfi\n",
    "the else of if false": "if false; then\n  echo no\nelse\n  sshd -t\n  systemctl restart sshd\nfi\n",
    "false || ...": "false || sshd -t\nfalse || systemctl restart sshd\n",
    "a pipeline after false && x ||": "false && echo no || { sshd -t; systemctl restart sshd; }\n",
    "exit in a function": "stop() { exit 0; }\n" + STEPS,
    "exit in an if": "if [ -n \"$DRY\" ]; then\n  exit 0\nfi\n" + STEPS,
    "exit in a subshell": "(exit 0)\n( cd /tmp && exit 0 )\n" + STEPS,
    "exit in a group that is skipped": "[ -f /etc/done ] && { echo done; exit 0; }\n" + STEPS,
    "exit after ||": "command -v sshd || exit 0\n" + STEPS,
    "exit after || on the line before": "command -v sshd ||\n  exit 0\n" + STEPS,
    "exit in the background": "exit 0 &\n" + STEPS,
    "exit piped": "exit 0 | cat\n" + STEPS,
    "exit with too many arguments": "exit 0 1\n" + STEPS,
    "exit as text": "echo exit 0\necho 'exit 0'\n" + STEPS,
    "exit in a multi-line string": 'MSG="\nexit 0\n"\n' + STEPS,
    "exit in a heredoc": "cat > /etc/x.sh <<'EOF'\nexit 0\nEOF\n" + STEPS,
    "exit in a heredoc bash reads past an indented end": "cat > /etc/x.sh <<EOF\n  EOF\nexit 0\nEOF\n" + STEPS,
    "exit in a heredoc the reader cannot delimit": "cat > /etc/x.sh <<\\EOF\nexit 0\nEOF\n" + STEPS,
    "exit in a case branch": 'case "$1" in\n  stop) exit 0 ;;\nesac\n' + STEPS,
    "a heredoc marker in a string": 'if false; then\n  echo "<<EOF"\nfi\n' + STEPS + "EOF\n",
    "a function named false": "false() { return 0; }\nif false; then\n  sshd -t\n  systemctl restart sshd\nfi\n",
    "a function named exit": "exit() { echo \"exit $*\"; }\nexit 0\n" + STEPS,
    "while true": "while true; do\n  sshd -t && break\ndone\nsystemctl restart sshd\n",
    "set -e and false": "set -e\nfalse\n" + STEPS,
}


def features(script: str) -> dict[str, float]:
    return agreement(extract_tip(TIP), extract_script(script)).values


def alone(script: str) -> float:
    return cal.DEFAULT.probability_of(cal.design_values(features(script), None))


def beside_peers(script: str) -> float:
    rows = [features(s) for s in [script, *PEERS]]
    peers = cal.peer_sums(["tip"] * len(rows), rows)
    return cal.DEFAULT.probability_of(cal.design_values(rows[0], None, peers[0]))


@pytest.mark.parametrize("form", sorted(DEAD))
def test_a_tips_steps_only_in_unreachable_code_count_for_nothing(form: str) -> None:
    script = LIVE + DEAD[form]
    assert features(script) == features(LIVE)
    assert alone(script) == alone(LIVE) and beside_peers(script) == beside_peers(LIVE)
    matched = {i["text"]: i["matched"] for i in agreement(extract_tip(TIP), extract_script(script)).evidence["prescribed"]}
    assert matched["sshd -t"] == matched["systemctl restart sshd"] == 0.0


def test_the_issues_scripts_no_longer_read_as_followed() -> None:
    # Read as code, each was followed with probability 0.695 alone and 0.993 beside its peers.
    for form in ("if false", "after exit 0"):
        script = LIVE + DEAD[form]
        assert alone(script) == alone(LIVE) < 0.5
        assert beside_peers(script) == beside_peers(LIVE) < 0.5
    assert alone(LIVE + STEPS) > 0.5, "the same steps, run, still read as followed"


@pytest.mark.parametrize("form", sorted(LIVE_FORMS))
def test_steps_that_may_run_stay_code(form: str) -> None:
    script = LIVE + LIVE_FORMS[form]
    view = extract_script(script)
    assert any("sshd -t" in line for line in view.lines), view.lines
    assert any("systemctl restart sshd" in line for line in view.lines), view.lines


def test_only_the_unreachable_part_of_a_line_is_dropped() -> None:
    view = extract_script("sshd -t; exit 0; systemctl restart sshd\nfalse && setenforce 0 || systemctl reload sshd\n")
    assert "sshd -t" in view.text and "exit 0" in view.text
    assert "systemctl restart sshd" not in view.text and "setenforce" not in view.text
    assert [line.strip() for line in view.lines] == ["sshd -t; exit 0"], "nothing after a top-level exit runs"
    view = extract_script("false && setenforce 0 || systemctl reload sshd\n")
    assert "setenforce" not in view.text and "systemctl reload sshd" in view.text


def test_code_before_an_unreadable_line_is_judged_and_after_it_kept() -> None:
    # A line the reader cannot follow (here a process substitution inside a multi-line string) ends
    # what it can say: blocks closed before it are dropped, everything from it on is kept.
    script = ("if false; then\n  setenforce 0\nfi\n"
              'X="$(\n'
              "if false; then\n  sshd -t\nfi\n)\"\n")
    view = extract_script(script)
    assert "setenforce" not in view.text and "sshd -t" in view.text


def test_a_script_past_the_cap_drops_what_its_head_shows_unreachable() -> None:
    filler = "".join(f"grep -q '^Setting{n} ' /etc/x.conf || echo 'Setting{n} yes' >> /etc/x.conf\n"
                     for n in range(MAX_SCRIPT_CHARS // 40))
    dead = LIVE + "if false; then\n  setenforce 0\nfi\n" + filler + STEPS
    view = extract_script(dead)
    assert view.capped and "setenforce" not in view.text and "sshd -t" in view.text
    after_exit = LIVE + "exit 0\n" + filler + STEPS
    view = extract_script(after_exit)
    assert view.capped and "sshd -t" not in view.text and "grep" not in view.text
