"""Hostile tip and script text costs the follow signal work linear in its size, and bounded.

Nothing here is timed. Each input is large enough that a reader quadratic in it (or worse) would
run for many minutes, where a linear one takes about a second: a regression hangs the test
visibly instead of making it flaky.
"""

from __future__ import annotations

import pytest

from ctxgraph import follow_signal
from ctxgraph.follow_signal import (
    MAX_SCRIPT_CHARS,
    MAX_TIP_CHARS,
    MAX_TIP_ITEMS,
    agreement,
    extract_script,
    extract_tip,
)

SENTENCE = "Run `sshd -t` before `systemctl restart sshd`; never set `PermitRootLogin yes`"
PLAIN = "Run sshd -t before restarting sshd"
ORDINARY = "sshd -t\nsystemctl restart sshd\n"


def at_cap(unit: str, tail: str = "") -> str:
    """``unit`` repeated to fill the script cap (then ``tail``)."""
    return unit * ((MAX_SCRIPT_CHARS - len(tail)) // len(unit)) + tail


# --- tips ----------------------------------------------------------------------------------------


def test_a_sentence_and_40000_newlines_is_read_as_the_sentence() -> None:
    # The issue's tip: 49.5 s per scoring pass, each whitespace character rescanning the run after it.
    for text in (SENTENCE + "." + "\n" * 40_000, SENTENCE + "\n" * 40_000, PLAIN + "\n" * 40_000):
        tip = extract_tip(text)
        alone = extract_tip(text.rstrip())
        assert (tip.prescribed, tip.warned, tip.order) == (alone.prescribed, alone.warned, alone.order)


# Whitespace runs where the tip's clause, consequence, setting and bound patterns could each start a
# match at every character of the run and scan the rest of it.
WHITESPACE_TIPS = {
    "trailing newlines": lambda n: PLAIN + "\n" * n,
    "spaces inside": lambda n: "Use X" + " " * n + "y",
    "tabs inside": lambda n: "a\t" + "\t" * n + "b",
    "blank lines between": lambda n: "a" + " \n" * n + "-",
    "after a key": lambda n: "Set MaxAuthTries" + " " * n + "to 4",
    "after a comma": lambda n: "a," + " " * n + "b",
    "after an equals sign": lambda n: "a =" + " " * n,
    "before a value": lambda n: "a_b" + " " * n + "1",
    "before so": lambda n: "restart it" + " " * n + "so",
    "before a dash": lambda n: "check it" + " " * n + "-",
}


@pytest.mark.parametrize("shape", sorted(WHITESPACE_TIPS))
def test_a_tip_of_400_000_blanks_is_read_once(shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Past the cap too, the reader itself is linear: quadratic, these took 0.6 s for 4,000 characters
    # (hours for these), where it now takes well under a second.
    monkeypatch.setattr(follow_signal, "MAX_TIP_CHARS", 1_000_000)
    tip = extract_tip(WHITESPACE_TIPS[shape](400_000))
    agreement(tip, extract_script(ORDINARY))


@pytest.mark.parametrize("unit", ["After a, ", "a, then ", "`a`, ", "`a`, `b` or ", "Before a, ", "a before "])
def test_a_tip_of_many_chained_steps_or_alternatives_is_read_once(unit: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # "After a, " repeated recursed once per step (a RecursionError at 1,000) copying the rest of the
    # sentence each time; a list of code spans with no "or" at its end was rescanned from every span
    # (1 s for 10,000 characters).
    monkeypatch.setattr(follow_signal, "MAX_TIP_CHARS", 1_000_000)
    tip = extract_tip(unit * 50_000)
    agreement(tip, extract_script(ORDINARY))


def test_a_tip_is_read_up_to_its_cap() -> None:
    head = "Run `sshd -t` before `systemctl restart sshd`. "
    tip = extract_tip(head + "Keep it short. " * (2 * MAX_TIP_CHARS // 15) + "Never run `setenforce 0`.")
    assert {i.text for i in tip.prescribed} >= {"sshd -t", "systemctl restart sshd"}
    assert not tip.warned, "what lies past the cap is not read"


def test_a_tip_naming_thousands_of_things_is_held_to_a_bounded_number_of_them() -> None:
    # Matching is items x script lines: 5,000 items against a script at the cap took an hour.
    tip = extract_tip(" ".join(f"`cmd{i} -x`; never run `bad{i} -y`." for i in range(5_000)))
    assert len(tip.prescribed) == len(tip.warned) == MAX_TIP_ITEMS
    assert tip.prescribed[0].text == "cmd0 -x" and tip.warned[0].text == "bad0 -y", "the first ones are kept"
    script = at_cap("grep -q '^Setting ' /etc/x.conf || echo 'Setting yes' >> /etc/x.conf\n")
    features = agreement(tip, extract_script(script))
    assert features.values["prescribed_share"] == 0.0


def test_a_nul_in_a_tip_is_text_not_a_placeholder() -> None:
    tip = extract_tip("Run `sshd -t`, then \x001\x00 and \x00999\x00.")
    assert [i.text for i in tip.prescribed if i.kind == "command"] == ["sshd -t"]


# --- scripts -------------------------------------------------------------------------------------


def test_the_issues_continuation_script_is_joined_in_one_pass() -> None:
    # 128 KiB of "a \" lines: 90 s of CPU per retrieval (every line rescanned the logical line so far).
    for size in (128 * 1024, MAX_SCRIPT_CHARS):
        lines = size // 4
        view = extract_script("a \\\n" * lines)
        assert len(view.lines) == 1 and view.lines[0].split() == ["a"] * lines


# Scripts at the cap, each a shape some reader of the script was quadratic (or worse) in.
HOSTILE_SCRIPTS = {
    "continued commands": lambda: at_cap("sshd -t \\\n"),
    "continued comments": lambda: at_cap("a \\ # c\n"),
    "a quote continued": lambda: at_cap('echo "a \\\n'),
    "double backslashes": lambda: at_cap("a \\\\\n"),
    "backslashes then blank lines": lambda: "a" + "\\" * (MAX_SCRIPT_CHARS // 2) + "\n" * (MAX_SCRIPT_CHARS // 2 - 2),
    "one-line functions each called": lambda: "".join(f"f{i}() {{ sshd -t; }}\nf{i}\n"
                                                      for i in range(MAX_SCRIPT_CHARS // 30)),
    "a long function called everywhere": lambda: "f() {\n" + "sshd -t\n" * (MAX_SCRIPT_CHARS // 16 - 1) + "}\n"
                                                 + "f\n" * (MAX_SCRIPT_CHARS // 4 - 4),
    "a chain of nested calls": lambda: "".join(f"f{i}() {{\nf{i - 1}\n}}\n"
                                               for i in range(MAX_SCRIPT_CHARS // 22)) + "f1\n",
    "a one-line definition then blanks": lambda: "f() { a }" + " " * (MAX_SCRIPT_CHARS - 11) + "x",
    "a definition then blanks": lambda: "f()" + " " * (MAX_SCRIPT_CHARS - 5) + "x",
    "sed with backslashes": lambda: "sed 's/" + "\\" * (MAX_SCRIPT_CHARS - 8),
    "sed addresses with escapes": lambda: "sed '/" + "\\a" * (MAX_SCRIPT_CHARS // 2 - 8),
    "systemctl with options": lambda: "systemctl " + "--a " * (MAX_SCRIPT_CHARS // 4 - 4),
    "many heredocs": lambda: at_cap("cat > /etc/x <<EOF\na\nEOF\n"),
    "an if per line": lambda: at_cap("if ! a; then\n"),
    "ors into groups": lambda: at_cap("a || {\n"),
    # What the reader of unreachable code walks: deep nesting, long chains, many branches.
    "nested blocks": lambda: "if true; then\n" * (MAX_SCRIPT_CHARS // 32) + "fi\n" * (MAX_SCRIPT_CHARS // 32),
    "dead loops nested": lambda: "while false; do\n" * (MAX_SCRIPT_CHARS // 40) + "done\n" * (MAX_SCRIPT_CHARS // 40),
    "a chain of skipped commands": lambda: at_cap("false &&\n", "sshd -t\n"),
    "a case of many branches": lambda: "case x in\n" + "a) sshd -t ;;\n" * (MAX_SCRIPT_CHARS // 16) + "esac\n",
    "code after an exit": lambda: "exit 0\n" + "sshd -t\n" * (MAX_SCRIPT_CHARS // 8 - 1),
}


@pytest.mark.parametrize("shape", sorted(HOSTILE_SCRIPTS))
def test_a_hostile_script_at_the_cap_is_read_in_one_pass(shape: str) -> None:
    script = HOSTILE_SCRIPTS[shape]()
    assert len(script) <= MAX_SCRIPT_CHARS
    view = extract_script(script)
    agreement(extract_tip(SENTENCE + "."), view)


def test_sed_and_systemctl_patterns_do_not_backtrack_exponentially() -> None:
    # Each backslash (or option) could be read two ways: 2**60 ways to fail on 60 of them.
    tip = extract_tip("Never run `sed -i` on it; run `systemctl restart sshd`.")
    for script in ("sed 's/" + "\\" * 60, "sed '/" + "\\a" * 60, "systemctl " + "--now " * 60 + "|"):
        agreement(tip, extract_script(script))


# What the one-pass joining must keep from the reading before it, odd cases included: a quote or a
# comment across a continuation, a backslash left before a blank line, a line of only a backslash.
CONTINUATIONS = {
    'echo "a # b \\\nc # d" # e\nx': [('echo "a # b  c # d" ', False), ("x", False)],
    "a \\ # c\nb": [("a  b", False)],
    "a \\\\\n\nb": [("a  b", False)],
    "\\\nb\nc": [("b", False), ("c", False)],
    "a \\\\\\\\\n\n\n\nb": [("a  b", False)],
    " \\\n\nb": [("  ", False), ("b", False)],
    "a \\\n  b \\\n": [("a  b  ", False)],
    "echo 'x \\\n# y' # z\n": [("echo 'x  # y' ", False), ("", False)],
    "a \\": [("a ", False)],
    "\\\\\n\nb": [("b", False)],
    "cat > /etc/x <<EOF \\\n  # c\nk v\nEOF\nz": [("cat > /etc/x <<EOF  ", False), ("k v", True), ("z", False)],
}


@pytest.mark.parametrize("script", sorted(CONTINUATIONS))
def test_continuations_are_joined_as_before(script: str) -> None:
    from ctxgraph.follow_signal.scripts import _logical_lines

    assert _logical_lines(script) == CONTINUATIONS[script]


# --- the judge's delimiter guard ------------------------------------------------------------------


@pytest.mark.parametrize("unit", ["<", "< ", "\u00ab", "<\u200b", "TIP ", "SCRIPT", ">"])
def test_the_judges_delimiter_guard_reads_a_script_at_the_cap_once(unit: str) -> None:
    # Tried from every bracket of a run, the look-alike pattern re-read the rest of the run: 32,000
    # "<" cost 32 s, a script at the cap about half an hour per question.
    from ctxgraph.judge_prompt import neutralise

    script = at_cap(unit)
    assert neutralise(script) == script
    guarded = neutralise(at_cap(unit, " SCRIPT>>>"))
    assert "SCRIPT>>>" not in guarded and "[escaped SCRIPT " in guarded
