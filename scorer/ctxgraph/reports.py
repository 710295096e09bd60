"""The audit: the analysts' SQL files run once, then drawn as terminal tables or one HTML page.

Every figure comes from ``sql/audit/*.sql``, the files analysts run with ``psql -v skill=stig -f``;
they ship inside the package as ``ctxgraph/audit`` (a symlink to ``sql/audit`` in a checkout, a copy
in an installed wheel), so each report exists once. This module adds only titles, notes and layout;
:func:`collect` returns plain data that both renderers share.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

import psycopg

from ctxgraph.audit_file import AuditFileError
from ctxgraph.audit_store import AuditResult, run_audit_file
from ctxgraph.connection_store import require_skill

__all__ = ["AuditData", "Section", "audit_files", "collect", "render_text", "render_text_section", "visible"]

TEXT_WIDTH = 64  # widest text cell in terminal tables; the HTML page shows whole texts


@dataclass
class Section:
    """One report section: a titled table (or a note when it has no rows)."""

    key: str
    title: str
    columns: list[str]
    rows: list[tuple[Any, ...]]
    note: str = ""
    empty: str = "none"


@dataclass
class AuditData:
    skill: str
    run_id: str | None
    rule_id: str | None
    generated_at: datetime
    sections: list[Section] = field(default_factory=list)
    # For the pictures: every tip with outcome-only rate, follow-weighted rate and follow rate.
    tip_points: list[tuple[int, str, float | None, float | None, float | None, int, bool]] = field(default_factory=list)
    # Cosines of retrievals the judge called followed / not followed.
    cosines_followed: list[float] = field(default_factory=list)
    cosines_ignored: list[float] = field(default_factory=list)
    misleading_min_outcome: float = 0.6
    misleading_max_follow: float = 0.34

    def section(self, key: str) -> Section | None:
        return next((s for s in self.sections if s.key == key), None)


# Presentation of the files' sections, in display order: key -> (title, note, text when empty).
# The queries themselves are only in sql/audit.
SECTIONS: dict[str, tuple[str, str, str]] = {
    "overview": ("Overview: coverage per run", "", "no retrievals logged"),
    "null_reasons": ("Why follow columns are NULL (per run and leg)", "", "no NULLs left by the scoring pass"),
    "ranking": ("Ranker order for {rule}: before (outcome-only) and after (follow-weighted)",
                "before = rank by outcome-only hit rate (pre-DEF-27); after = rank by follow-weighted hit rate",
                "no tips for this rule"),
    "top": ("Top tips by follow-weighted utility", "", "none"),
    "bottom": ("Bottom tips by follow-weighted utility", "", "none"),
    "misleading": ("Misleading tips (ADR audit section 4): credited by outcome, mostly ignored",
                   "credited by outcome-only scoring although the Worker mostly ignored them",
                   "no tip has a high outcome-only rate with a low follow rate"),
    "harmful_when_followed": ("Harmful when followed: following fails the attempt, co-followed tips explained away",
                              "the probability that following the tip fails the attempt (ctxgraph.tip_effects), "
                              "the tips followed with it and the rule's pass rate explained away; listed above "
                              "blame.misleading_above, with the effect when followed beside it",
                              "no tip is shown harmful when followed"),
    "harmful": ("Followed while the system broke (harm count)", "", "no tip was followed during a health failure"),
    "eviction": ("Eviction preview (dry run: what ctxgraph.evict_tips would retire now)", "",
                 "no tip has enough evidence against it"),
    "agreement": ("Judge / embedding agreement", "", "none"),
    "anomalies": ("Anomalies: judge and cosine disagree starkly", "", "none"),
}
# Results that feed the HTML pictures rather than a table (sql/audit/08_picture_data.sql).
PICTURE_DATA = {"tip_points", "judged_cosines", "misleading_thresholds"}


def audit_files() -> list[Traversable]:
    """The analysts' audit files (sql/audit/*.sql, shipped as package data), in file-name order."""
    folder = resources.files("ctxgraph") / "audit"
    return sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)


def collect(conn: psycopg.Connection, skill: str, run_id: str | None = None, rule_id: str | None = None,
            top: int = 10) -> AuditData:
    """Run every audit file for a skill (optionally one run, and one rule's ranking) and gather the results.

    Raises UnknownSkill (ctxgraph.connection_store) for a skill ctxgraph does not know, and psycopg errors
    as they come.
    """
    require_skill(conn, skill)
    # psql variables, as an analyst would pass them with -v; unset ones take the files' defaults.
    variables = {"skill": skill, "top": str(top)}
    if run_id is not None:
        variables["run"] = run_id
    if rule_id is not None:
        variables["rule"] = rule_id
    results: dict[str, AuditResult] = {}
    for path in audit_files():
        for result in run_audit_file(conn, path.name, path.read_text(encoding="utf-8"), variables):
            if result.key not in SECTIONS and result.key not in PICTURE_DATA:
                raise AuditFileError(f"{path.name}: section {result.key!r} has no title in ctxgraph.reports")
            results[result.key] = result
    conn.rollback()

    data = AuditData(skill, run_id, rule_id, datetime.now().astimezone())
    for key, (title, note, empty) in SECTIONS.items():
        if key in results:
            result = results[key]
            data.sections.append(Section(key, title.format(rule=rule_id), result.columns, result.rows, note, empty))
    agreement = data.section("agreement")
    if agreement and agreement.rows and agreement.rows[0][0] == 0:
        agreement.note = "no retrieval has both a judge verdict and a cosine yet (was the judge leg run?)"
    if "tip_points" in results:
        data.tip_points = [tuple(row) for row in results["tip_points"].rows]  # type: ignore[misc]
    if "judged_cosines" in results:
        cosines = results["judged_cosines"].rows
        data.cosines_followed = [float(c) for followed, c in cosines if followed]
        data.cosines_ignored = [float(c) for followed, c in cosines if not followed]
    if "misleading_thresholds" in results and results["misleading_thresholds"].rows:
        data.misleading_min_outcome, data.misleading_max_follow = results["misleading_thresholds"].rows[0]
    return data


def visible(text: str) -> str:
    """``text`` safe to print on a terminal: every control or format character (ESC, C1 controls such as
    CSI, BEL, bidirectional overrides, zero-width characters) spelled out as ``\\xNN`` / ``\\uNNNN``,
    so tip bodies and ids can neither move the cursor, recolour, retitle the terminal nor reorder what
    is shown. Line breaks and tabs are the caller's to handle (cells fold them into spaces)."""
    if text.isprintable():
        return text
    return "".join(_spelled(c) if c not in "\n\t" and unicodedata.category(c) in _UNPRINTED else c for c in text)


_UNPRINTED = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def _spelled(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def format_cell(value: Any, width: int = TEXT_WIDTH) -> str:
    """A value as a terminal cell: 3-decimal floats, yes/no booleans, long texts cut with an ellipsis,
    control and format characters spelled out (:func:`visible`)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.3f}"
    if isinstance(value, Decimal):  # round(x::numeric, 3) in the audit files
        return "nan" if value.is_nan() else str(value)
    text = visible(" ".join(str(value).split()))
    return text if len(text) <= width else text[: width - 1] + "…"


def _table(section: Section) -> list[str]:
    cells = [[format_cell(v) for v in row] for row in section.rows]
    widths = [max([len(visible(c))] + [len(r[i]) for r in cells]) for i, c in enumerate(section.columns)]
    numeric = [all(isinstance(row[i], (int, float, Decimal)) and not isinstance(row[i], bool) or row[i] is None
                   for row in section.rows) for i in range(len(section.columns))]

    def line(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric)).rstrip()

    out = [line([visible(c) for c in section.columns]), line(["-" * w for w in widths])]
    out.extend(line(r) for r in cells)
    return out


def render_text_section(section: Section) -> str:
    """One section as an aligned terminal table."""
    lines = [f"== {visible(section.title)}"]
    if section.note:
        lines.append(f"   {visible(section.note)}")
    if section.rows:
        lines.extend("   " + row for row in _table(section))
    else:
        lines.append(f"   ({section.empty})")
    return "\n".join(lines)


def render_text(data: AuditData) -> str:
    """Every section as an aligned terminal table."""
    scope = visible(f"skill {data.skill}" + (f", run {data.run_id}" if data.run_id else ", all runs"))
    lines = [f"ctxgraph audit: {scope} ({data.generated_at:%Y-%m-%d %H:%M %Z})"]
    for section in data.sections:
        lines.append("")
        lines.append(render_text_section(section))
    return "\n".join(lines) + "\n"
