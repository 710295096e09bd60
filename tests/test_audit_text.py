"""ctxgraph audit's terminal output never carries raw control or escape sequences from the data."""

from __future__ import annotations

import unicodedata
from datetime import datetime, timezone

import pytest

from ctxgraph import reports
from ctxgraph.reports import AuditData, Section, format_cell, render_text, visible

HOSTILE = [
    "\x1b[31mred\x1b[0m tip",           # SGR colour
    "\x1b]0;owned\x07 retitle",         # OSC: set the window title
    "\x1b[2J\x1b[H clear the screen",   # erase display, cursor home
    "\x9b31m C1 CSI",                   # the one-byte CSI
    "over\rwrite",                      # carriage return back over the line
    "bell\x07 and back\x08space",
    "\u202etxt.exe",                    # right-to-left override
    "zero\u200bwidth",
]


def raw_controls(text: str) -> list[str]:
    return [c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf")]


@pytest.mark.parametrize("body", HOSTILE)
def test_a_hostile_cell_is_printed_escaped(body: str) -> None:
    cell = format_cell(body, width=200)
    assert raw_controls(cell) == []
    assert cell != body


def test_visible_spells_out_what_it_escapes_and_leaves_plain_text_alone() -> None:
    assert visible("\x1b[31mred") == "\\x1b[31mred"
    assert visible("\x9b1m") == "\\x9b1m"
    assert visible("a\u202eb") == "a\\u202eb"
    assert visible("sshd -t && systemctl restart sshd; chmod 0440 /etc/sudoers ü ✓") == (
        "sshd -t && systemctl restart sshd; chmod 0440 /etc/sudoers ü ✓")
    assert format_cell("line one\nline\ttwo") == "line one line two"


def test_the_whole_terminal_audit_carries_no_raw_control_characters() -> None:
    section = Section("top", "Top tips for \x1b[5mrule", ["tip_id", "body\x1b[8m"],
                      [(n, body) for n, body in enumerate(HOSTILE)], note="note \x1b[1m")
    data = AuditData("stig", "run-\x1b[31m7", None, datetime(2026, 5, 1, tzinfo=timezone.utc), [section])
    text = render_text(data)
    assert raw_controls(text) == []
    assert "\\x1b[31mred\\x1b[0m tip" in text and "run-\\x1b[31m7" in text
    assert "\\x1b]0;owned\\x07 retitle" in text and "\\u202etxt.exe" in text
    assert reports.render_text_section(section).count("\n") == len(HOSTILE) + 3
