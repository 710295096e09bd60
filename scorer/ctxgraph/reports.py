"""The audit: the SQL views' answers gathered once, then drawn as terminal tables or one HTML page.

Every figure comes from the database (views and functions in schema ctxgraph / <skill>); this module
only selects and lays out. :func:`collect` returns plain data that both renderers share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg

__all__ = ["AuditData", "Section", "collect", "render_text", "render_text_section"]

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


def _query(conn: psycopg.Connection, sql: str, params: dict[str, Any]) -> tuple[list[str], list[tuple[Any, ...]]]:
    cur = conn.execute(sql, params)
    columns = [d.name for d in cur.description or []]
    return columns, list(cur.fetchall())


def collect(conn: psycopg.Connection, skill: str, run_id: str | None = None, rule_id: str | None = None,
            top: int = 10) -> AuditData:
    """Gather every audit section for a skill (optionally one run, and one rule's ranking)."""
    known = conn.execute("SELECT 1 FROM ctxgraph.skills WHERE name = %s", (skill,)).fetchone()
    if known is None:
        raise ValueError(f"unknown skill {skill!r}")
    p = {"skill": skill, "run": run_id, "rule": rule_id, "top": top}
    data = AuditData(skill, run_id, rule_id, datetime.now().astimezone())

    def add(key: str, title: str, sql: str, note: str = "", empty: str = "none") -> None:
        columns, rows = _query(conn, sql, p)
        data.sections.append(Section(key, title, columns, rows, note, empty))

    add("overview", "Overview: coverage per run", """
        SELECT run_id, attempts, rules, retrievals, with_outcome, scored, unscored, judge_verdicts, cosines, followed
          FROM ctxgraph.run_overview WHERE skill = %(skill)s AND (%(run)s::text IS NULL OR run_id = %(run)s)
         ORDER BY first_retrieval""", empty="no retrievals logged")
    add("null_reasons", "Why follow columns are NULL (per run and leg)", """
        SELECT run_id, leg, reason, retrievals FROM ctxgraph.scoring_null_reasons
         WHERE skill = %(skill)s AND (%(run)s::text IS NULL OR run_id = %(run)s)
         ORDER BY run_id, leg, retrievals DESC, reason""", empty="no NULLs left by the scoring pass")
    if rule_id:
        add("ranking", f"Ranker order for {rule_id}: before (outcome-only) and after (follow-weighted)", """
            SELECT outcome_rank AS before, follow_rank AS after, tip_id, outcome_hit_rate, hit_rate,
                   follow_rate, attempts, retired, body
              FROM ctxgraph.rule_ranking(%(skill)s, %(rule)s)""",
            note="before = rank by outcome-only hit rate (pre-DEF-27); after = rank by follow-weighted hit rate",
            empty="no tips for this rule")
    add("top", "Top tips by follow-weighted utility", """
        SELECT h.tip_id, h.rule_id, h.hit_rate, h.utility_lower_bound, h.outcome_hit_rate, h.follow_rate,
               h.attempts, t.body
          FROM ctxgraph.tip_hit_rates AS h JOIN ctxgraph.tips AS t ON t.skill = h.skill AND t.id = h.tip_id
         WHERE h.skill = %(skill)s AND h.scored > 0 AND NOT h.retired
         ORDER BY h.utility_lower_bound DESC NULLS LAST, h.hit_rate DESC, h.tip_id LIMIT %(top)s""")
    add("bottom", "Bottom tips by follow-weighted utility", """
        SELECT h.tip_id, h.rule_id, h.hit_rate, h.outcome_hit_rate, h.follow_rate, h.harm, h.attempts, t.body
          FROM ctxgraph.tip_hit_rates AS h JOIN ctxgraph.tips AS t ON t.skill = h.skill AND t.id = h.tip_id
         WHERE h.skill = %(skill)s AND h.scored > 0
         ORDER BY h.hit_rate ASC NULLS LAST, h.outcome_hit_rate DESC, h.tip_id LIMIT %(top)s""")
    add("misleading", "Misleading tips (ADR audit section 4): high outcome, low follow rate", """
        SELECT tip_id, rule_id, outcome_hit_rate, hit_rate, follow_rate, credit_gap, attempts, body
          FROM ctxgraph.misleading_tips WHERE skill = %(skill)s ORDER BY credit_gap DESC, tip_id""",
        note="credited by outcome-only scoring although the Worker mostly ignored them",
        empty="no tip has a high outcome-only rate with a low follow rate")
    add("harmful", "Harmful tips: followed while the system broke", """
        SELECT tip_id, rule_id, harm, harm_rate, hit_rate, follow_rate, attempts, body
          FROM ctxgraph.harmful_tips WHERE skill = %(skill)s ORDER BY harm DESC, harm_rate DESC, tip_id""",
        empty="no tip was followed during a health failure")
    add("eviction", "Eviction preview (dry run: what ctxgraph.evict_tips would retire now)", """
        SELECT tip_id, rule_id, attempts, runs, followed_attempts, followed_outcome, rule_baseline, harm_attempts,
               reason
          FROM ctxgraph.eviction_candidates WHERE skill = %(skill)s ORDER BY tip_id""",
        empty="no tip has enough evidence against it")
    add("agreement", "Judge / embedding agreement", """
        SELECT judged, both_followed, judge_only_followed, emb_only_followed, both_ignored, agreement, kappa,
               threshold, best_threshold, best_kappa
          FROM ctxgraph.follow_agreement WHERE skill = %(skill)s""")
    agreement = data.section("agreement")
    if agreement and agreement.rows and agreement.rows[0][0] == 0:
        agreement.note = "no retrieval has both a judge verdict and a cosine yet (was the judge leg run?)"
    add("anomalies", "Anomalies: judge and cosine disagree starkly", """
        SELECT retrieval_id, run_id, rule_id, tip_id, tip_followed_llm, tip_followed_emb, kind
          FROM ctxgraph.follow_anomalies WHERE skill = %(skill)s AND (%(run)s::text IS NULL OR run_id = %(run)s)
         ORDER BY retrieval_id LIMIT 50""", empty="none")

    _, points = _query(conn, """
        SELECT h.tip_id, coalesce(h.rule_id, '(general)'), h.outcome_hit_rate, h.hit_rate, h.follow_rate, h.attempts,
               EXISTS (SELECT 1 FROM ctxgraph.misleading_tips AS m WHERE m.skill = h.skill AND m.tip_id = h.tip_id)
          FROM ctxgraph.tip_hit_rates AS h WHERE h.skill = %(skill)s AND h.scored > 0 ORDER BY h.tip_id""", p)
    data.tip_points = [tuple(row) for row in points]  # type: ignore[misc]
    _, cosines = _query(conn, """
        SELECT tip_followed_llm, tip_followed_emb FROM ctxgraph.tip_retrievals
         WHERE skill = %(skill)s AND (%(run)s::text IS NULL OR run_id = %(run)s)
           AND tip_followed_llm IS NOT NULL AND tip_followed_emb IS NOT NULL
           AND tip_followed_emb <> 'NaN'::double precision""", p)
    data.cosines_followed = [float(c) for followed, c in cosines if followed]
    data.cosines_ignored = [float(c) for followed, c in cosines if not followed]
    _, thresholds = _query(conn, """
        SELECT max(value) FILTER (WHERE name = 'misleading.min_outcome_hit_rate'),
               max(value) FILTER (WHERE name = 'misleading.max_follow_rate')
          FROM ctxgraph.parameters""", p)
    data.misleading_min_outcome, data.misleading_max_follow = thresholds[0]
    conn.rollback()
    return data


def format_cell(value: Any, width: int = TEXT_WIDTH) -> str:
    """A value as a terminal cell: 3-decimal floats, yes/no booleans, long texts cut with an ellipsis."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.3f}"
    text = " ".join(str(value).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _table(section: Section) -> list[str]:
    cells = [[format_cell(v) for v in row] for row in section.rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(section.columns)]
    numeric = [all(isinstance(row[i], (int, float)) and not isinstance(row[i], bool) or row[i] is None
                   for row in section.rows) for i in range(len(section.columns))]

    def line(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric)).rstrip()

    out = [line(section.columns), line(["-" * w for w in widths])]
    out.extend(line(r) for r in cells)
    return out


def render_text_section(section: Section) -> str:
    """One section as an aligned terminal table."""
    lines = [f"== {section.title}"]
    if section.note:
        lines.append(f"   {section.note}")
    if section.rows:
        lines.extend("   " + row for row in _table(section))
    else:
        lines.append(f"   ({section.empty})")
    return "\n".join(lines)


def render_text(data: AuditData) -> str:
    """Every section as an aligned terminal table."""
    scope = f"skill {data.skill}" + (f", run {data.run_id}" if data.run_id else ", all runs")
    lines = [f"ctxgraph audit: {scope} ({data.generated_at:%Y-%m-%d %H:%M %Z})"]
    for section in data.sections:
        lines.append("")
        lines.append(render_text_section(section))
    return "\n".join(lines) + "\n"
