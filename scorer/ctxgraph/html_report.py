"""The audit as ONE self-contained HTML page: tables for every section, inline SVG where a picture helps.

Nothing is fetched: no scripts, no web fonts, no remote images; the styles and the three pictures are
inline (SVG built here by string building). A Content-Security-Policy meta tag makes the browser refuse
any external asset or script, so a mistake here (or a tip body that escaped escaping) cannot load
anything. Every text that comes from the database passes through :func:`html.escape`: tip bodies are
untrusted (an agent wrote them).

The pictures:

a. follow rate against outcome-only hit rate, one point per tip, the misleading corner shaded;
b. cosines of retrievals the judge called followed vs not followed (dodged histograms);
c. each tip's utility before (outcome-only) and after (follow-weighted) scoring, as a dumbbell.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from decimal import Decimal
from html import escape
from typing import Any

from ctxgraph.reports import AuditData, Section

__all__ = ["render_html", "format_html_cell"]

EN_DASH = "\u2013"
MAX_DUMBBELL_ROWS = 400  # beyond this the utility picture shows the first rows and says so

# Okabe-Ito colours: distinguishable with the common colour-vision deficiencies and in greyscale print.
BLUE = "#0072B2"
ORANGE = "#E69F00"
VERMILLION = "#D55E00"
GREY = "#8a8f98"
INK = "#1d2330"
GRID = "#e3e6eb"
CORNER_FILL = "#fbe3d6"
SVG_FONT = "system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif"

CSS = """
:root { --ink: #1d2330; --muted: #5b6270; --rule: #d9dde3; --zebra: #f6f7f9; --accent: #0072B2; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; color: var(--ink); background: #fff;
       font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 28px 28px 56px; }
header { border-bottom: 3px solid var(--ink); padding-bottom: 14px; margin-bottom: 18px; }
h1 { font-size: 26px; margin: 0 0 6px; letter-spacing: -0.01em; }
h2 { font-size: 19px; margin: 34px 0 6px; padding-top: 6px; border-top: 1px solid var(--rule); }
h3 { font-size: 16px; margin: 0 0 8px; }
.meta { margin: 0; color: var(--muted); }
.meta b { color: var(--ink); font-weight: 600; }
.kpis { display: flex; flex-wrap: wrap; gap: 10px; margin: 14px 0 0; padding: 0; list-style: none; }
.kpis li { border: 1px solid var(--rule); border-radius: 6px; padding: 6px 12px; min-width: 9em; }
.kpis .v { display: block; font-size: 20px; font-weight: 650; font-variant-numeric: tabular-nums; }
.kpis .k { display: block; font-size: 12.5px; color: var(--muted); }
nav { margin: 6px 0 0; font-size: 13.5px; }
nav ol { margin: 4px 0 0; padding-left: 20px; columns: 2; column-gap: 32px; }
nav a { color: var(--accent); text-decoration: none; }
nav a:hover { text-decoration: underline; }
.note { margin: 0 0 8px; color: var(--muted); }
.empty { margin: 4px 0 0; padding: 10px 12px; border-left: 4px solid var(--rule); background: var(--zebra);
         color: var(--muted); }
figure { margin: 22px 0 8px; padding: 16px 16px 10px; border: 1px solid var(--rule); border-radius: 8px;
         break-inside: avoid; page-break-inside: avoid; }
figure svg { display: block; width: 100%; height: auto; max-width: 100%; }
figcaption { margin-top: 8px; font-size: 13.5px; color: var(--muted); }
figcaption b { color: var(--ink); }
.legend { display: flex; flex-wrap: wrap; gap: 6px 18px; margin: 0 0 6px; padding: 0; list-style: none;
          font-size: 13px; }
.legend li { display: flex; align-items: center; gap: 6px; }
.legend svg { width: 16px; height: 16px; flex: none; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 13.5px; margin: 4px 0 0; min-width: 40%; }
th, td { padding: 5px 10px; border-bottom: 1px solid var(--rule); vertical-align: top; text-align: left; }
thead th { border-bottom: 2px solid var(--ink); font-weight: 600; vertical-align: bottom; background: #fff; }
thead th.short { white-space: nowrap; }
tbody tr:nth-child(even) td { background: var(--zebra); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.txt { white-space: pre-wrap; }
td.mid { min-width: 15em; }
td.long { min-width: 22em; max-width: 46em; overflow-wrap: anywhere; }
td.bool { white-space: nowrap; }
.null { color: #a0a6b0; }
code { font: 0.92em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
footer { margin-top: 40px; font-size: 12.5px; color: var(--muted); }
@media print {
  body { font-size: 10pt; }
  main { max-width: none; padding: 0; }
  nav { display: none; }
  h2 { break-after: avoid; page-break-after: avoid; }
  tr, figure { break-inside: avoid; page-break-inside: avoid; }
  .scroll { overflow: visible; }
  a { color: inherit; text-decoration: none; }
}
@page { margin: 14mm; }
"""


# --- values ---------------------------------------------------------------------------------------
def _num(value: Any) -> float | None:
    """A finite float, or None for NULL / NaN / infinities / non-numbers."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def format_html_cell(value: Any) -> tuple[str, str]:
    """(css class, escaped HTML) for one table cell."""
    if value is None:
        return "null", f'<span class="null" title="NULL">{EN_DASH}</span>'
    if isinstance(value, bool):
        return "bool", "yes" if value else "no"
    if isinstance(value, int):
        return "num", str(value)
    if isinstance(value, (float, Decimal)):
        number = float(value)
        if math.isnan(number):
            return "num", "NaN"
        if math.isinf(number):
            return "num", "\u221e" if number > 0 else "\u2212\u221e"
        return "num", f"{number:.3f}".replace("-", "\u2212")
    if isinstance(value, datetime):
        return "txt", escape(value.isoformat(sep=" ", timespec="seconds"))
    if isinstance(value, date):
        return "txt", escape(value.isoformat())
    text = str(value)
    if len(text) > 60:
        return "txt long", escape(text)
    if len(text) > 20:
        return "txt mid", _breakable(text)
    return "txt", escape(text)


def _breakable(text: str) -> str:
    """Escaped text that may wrap after '_', '/' or '.' (identifiers) but not mid-word."""
    out = escape(text)
    for ch in ("_", "/", "."):
        out = out.replace(ch, ch + "<wbr>")
    return out


def _f(x: float) -> str:
    """A coordinate for SVG attributes."""
    return f"{x:.1f}".rstrip("0").rstrip(".") if abs(x) < 1e6 else "0"


def _r(value: float | None) -> str:
    return EN_DASH if value is None else f"{value:.3f}"


def _nice_domain(values: Iterable[float], lo: float, hi: float, step: float) -> tuple[float, float]:
    """The smallest [lo', hi'] on a `step` grid that holds [lo, hi] and every value."""
    vals = list(values)
    low = min([lo, *vals])
    high = max([hi, *vals])
    return math.floor(low / step + 1e-9) * step, math.ceil(high / step - 1e-9) * step


def _ticks(lo: float, hi: float, step: float) -> list[float]:
    n = int(round((hi - lo) / step))
    return [round(lo + i * step, 10) for i in range(n + 1)]


def _tick_label(v: float, decimals: int = 1) -> str:
    text = f"{v:.{decimals}f}"
    if text.startswith("-") and float(text) == 0:
        text = text[1:]
    return text.replace("-", "\u2212")


def _svg_open(width: int, height: int, label: str, extra: str = "") -> str:
    return (f'<svg viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
            f'aria-label="{escape(label)}" font-family="{SVG_FONT}" font-size="12" fill="{INK}"{extra}>')


def _legend(items: Sequence[tuple[str, str]]) -> str:
    """A legend as HTML: (swatch SVG inner markup, escaped label)."""
    lis = "".join(f'<li><svg viewBox="0 0 16 16" aria-hidden="true">{sw}</svg>{label}</li>'
                  for sw, label in items)
    return f'<ul class="legend">{lis}</ul>'


# --- picture a: the misleading-tip scatter ------------------------------------------------------------
def _fan_out(points: list[tuple[float, float, Any]], left: float, right: float, top: float, bottom: float,
             spacing: float = 5.5) -> list[tuple[float, float, Any]]:
    """Spread points that share a pixel position on a sunflower spiral around it, inside the plot."""
    groups: dict[tuple[int, int], list[tuple[float, float, Any]]] = defaultdict(list)
    for px, py, payload in points:
        groups[(round(px), round(py))].append((px, py, payload))
    golden = math.pi * (3 - math.sqrt(5))
    out: list[tuple[float, float, Any]] = []
    for members in groups.values():
        for i, (px, py, payload) in enumerate(members):
            dx = spacing * math.sqrt(i) * math.cos(i * golden)
            dy = spacing * math.sqrt(i) * math.sin(i * golden)
            if not left + 3 <= px + dx <= right - 3:
                dx = -dx
            if not top + 3 <= py + dy <= bottom - 3:
                dy = -dy
            out.append((px + dx, py + dy, payload))
    return out


def _scatter(data: AuditData) -> str:
    min_outcome = _num(data.misleading_min_outcome)
    max_follow = _num(data.misleading_max_follow)
    usable = []
    skipped = 0
    for point in data.tip_points:
        tip_id, rule, outcome, hit, follow, attempts, misleading = point
        x, y = _num(outcome), _num(follow)
        if x is None or y is None:
            skipped += 1
            continue
        usable.append((tip_id, rule, x, _num(hit), y, attempts, bool(misleading)))
    flagged = sum(1 for p in usable if p[6])

    width, height = 960, 500
    ml, mr, mt, mb = 70, 24, 18, 56
    left, right, top, bottom = ml, width - mr, mt, height - mb
    x_lo, x_hi = _nice_domain([p[2] for p in usable], 0.0, 1.0, 0.2)
    y_lo, y_hi = _nice_domain([p[4] for p in usable], 0.0, 1.0, 0.2)

    def sx(v: float) -> float:
        return left + (v - x_lo) / (x_hi - x_lo) * (right - left)

    def sy(v: float) -> float:
        return bottom - (v - y_lo) / (y_hi - y_lo) * (bottom - top)

    label = (f"Scatter plot of {len(usable)} tips: outcome-only hit rate (x) against follow rate (y); "
             f"{flagged} tips flagged as misleading")
    parts = [_svg_open(width, height, label)]
    # misleading corner
    if min_outcome is not None and max_follow is not None:
        cx0, cx1 = sx(max(min_outcome, x_lo)), right
        cy0, cy1 = sy(min(max_follow, y_hi)), bottom
        if cx1 > cx0 and cy1 > cy0:
            parts.append(f'<rect x="{_f(cx0)}" y="{_f(cy0)}" width="{_f(cx1 - cx0)}" '
                         f'height="{_f(cy1 - cy0)}" fill="{CORNER_FILL}" stroke="{VERMILLION}" '
                         f'stroke-width="1" stroke-dasharray="4 3">'
                         f'<title>misleading corner: outcome-only hit rate \u2265 {min_outcome:.2f} and '
                         f'follow rate \u2264 {max_follow:.2f}</title></rect>')
            parts.append(f'<text x="{_f(cx0 + 8)}" y="{_f(cy0 + 17)}" font-size="12.5" font-weight="600" '
                         f'fill="{VERMILLION}">misleading corner</text>')
            parts.append(f'<text x="{_f(cx0 + 8)}" y="{_f(cy0 + 32)}" font-size="11" fill="{VERMILLION}">'
                         f'outcome \u2265 {min_outcome:.2f}, follow \u2264 {max_follow:.2f}</text>')
    # grid and axes
    for t in _ticks(x_lo, x_hi, 0.2):
        x = sx(t)
        parts.append(f'<line x1="{_f(x)}" y1="{top}" x2="{_f(x)}" y2="{bottom}" stroke="{GRID}"/>')
        parts.append(f'<line x1="{_f(x)}" y1="{bottom}" x2="{_f(x)}" y2="{bottom + 5}" stroke="{INK}"/>')
        parts.append(f'<text x="{_f(x)}" y="{bottom + 19}" text-anchor="middle">{_tick_label(t)}</text>')
    for t in _ticks(y_lo, y_hi, 0.2):
        y = sy(t)
        parts.append(f'<line x1="{left}" y1="{_f(y)}" x2="{right}" y2="{_f(y)}" stroke="{GRID}"/>')
        parts.append(f'<line x1="{left - 5}" y1="{_f(y)}" x2="{left}" y2="{_f(y)}" stroke="{INK}"/>')
        parts.append(f'<text x="{left - 9}" y="{_f(y + 4)}" text-anchor="end">{_tick_label(t)}</text>')
    parts.append(f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="{INK}"/>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="{INK}"/>')
    parts.append(f'<text x="{_f((left + right) / 2)}" y="{height - 12}" text-anchor="middle" font-size="13" '
                 f'font-weight="600">outcome-only hit rate (credit before DEF-27)</text>')
    parts.append(f'<text transform="translate(16 {_f((top + bottom) / 2)}) rotate(-90)" text-anchor="middle" '
                 f'font-size="13" font-weight="600">follow rate (share of retrievals followed)</text>')
    # points: ordinary first, flagged on top
    raw = [(sx(p[2]), sy(p[4]), p) for p in sorted(usable, key=lambda p: (p[6], p[0]))]
    for px, py, p in _fan_out(raw, left, right, top, bottom):
        tip_id, rule, x, hit, y, attempts, misleading = p
        title = (f"tip {tip_id} \u00b7 rule {rule}\noutcome-only hit rate {x:.3f}\nfollow-weighted hit rate "
                 f"{_r(hit)}\nfollow rate {y:.3f}\nattempts {attempts}"
                 + ("\nflagged misleading" if misleading else ""))
        tip_title = f"<title>{escape(title)}</title>"
        if misleading:
            s = 6.0
            parts.append(f'<path d="M{_f(px)} {_f(py - s)}L{_f(px + s)} {_f(py)}L{_f(px)} {_f(py + s)}'
                         f'L{_f(px - s)} {_f(py)}Z" fill="{VERMILLION}" stroke="#5a1f00" stroke-width="1">'
                         f'{tip_title}</path>')
        else:
            parts.append(f'<circle cx="{_f(px)}" cy="{_f(py)}" r="4.3" fill="{BLUE}" fill-opacity="0.78" '
                         f'stroke="#fff" stroke-width="0.8">{tip_title}</circle>')
    if not usable:
        parts.append(f'<text x="{_f((left + right) / 2)}" y="{_f((top + bottom) / 2)}" text-anchor="middle" '
                     f'fill="{GREY}" font-size="14">no tip has both rates yet</text>')
    parts.append("</svg>")

    legend = _legend([
        (f'<circle cx="8" cy="8" r="4.5" fill="{BLUE}" fill-opacity="0.78"/>', "tip"),
        (f'<path d="M8 2L14 8L8 14L2 8Z" fill="{VERMILLION}" stroke="#5a1f00"/>',
         "tip flagged by <code>misleading_tips</code>"),
        (f'<rect x="1" y="3" width="14" height="10" fill="{CORNER_FILL}" stroke="{VERMILLION}" '
         f'stroke-dasharray="3 2"/>', "misleading corner"),
    ])
    corner = (f"the shaded corner holds tips with outcome-only rate \u2265 {min_outcome:.2f} and follow rate "
              f"\u2264 {max_follow:.2f}; a tip there is flagged only with enough support (attempts)"
              if min_outcome is not None and max_follow is not None
              else "the misleading thresholds are not set, so no corner is drawn")
    verb = "is" if flagged == 1 else "are"
    caption = (f"<b>Figure 1. Credited but ignored?</b> Each of the {len(usable)} tips with both rates is "
               f"one point; {flagged} {verb} flagged misleading. {escape(corner[0].upper() + corner[1:])}. "
               f"Tips with identical rates are fanned out around their shared value; hover a point for its "
               f"figures.{_skipped(skipped, 'tip', 'no outcome-only or follow rate')}")
    return _figure("fig-scatter", "Outcome-only credit against follow rate", legend + "".join(parts), caption)


def _skipped(n: int, noun: str, why: str) -> str:
    if not n:
        return ""
    return f" {n} {noun}{'' if n == 1 else 's'} skipped ({escape(why)})."


def _figure(fig_id: str, heading: str, body: str, caption: str) -> str:
    return (f'<figure id="{fig_id}"><h3>{escape(heading)}</h3><div class="scroll">{body}</div>'
            f"<figcaption>{caption}</figcaption></figure>")


# --- picture b: cosine distributions -----------------------------------------------------------------
def _threshold(data: AuditData, column: str) -> float | None:
    section = data.section("agreement")
    if section is None or not section.rows or column not in section.columns:
        return None
    return _num(section.rows[0][section.columns.index(column)])


def _median(values: Sequence[float]) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def _cosines(data: AuditData) -> str:
    followed = [v for v in (_num(c) for c in data.cosines_followed) if v is not None]
    ignored = [v for v in (_num(c) for c in data.cosines_ignored) if v is not None]
    skipped = len(data.cosines_followed) + len(data.cosines_ignored) - len(followed) - len(ignored)
    heading = "Cosine of followed vs ignored retrievals"
    if not followed and not ignored:
        body = ('<p class="empty">No judge verdicts exist yet: no retrieval has both an LLM-judge verdict '
                'and an embedding cosine, so the cosines of followed and ignored retrievals cannot be '
                'compared. Run the scoring pass with the judge leg enabled (<code>ctxgraph score</code> with '
                'a judge URL) to fill it.</p>')
        caption = ("<b>Figure 2. Does the cosine separate what the judge saw?</b> Empty until the judge leg "
                   f"has run.{_skipped(skipped, 'cosine', 'NULL or NaN')}")
        return _figure("fig-cosines", heading, body, caption)

    threshold = _threshold(data, "threshold")
    best = _threshold(data, "best_threshold")
    step = 0.05
    lo, hi = _nice_domain(followed + ignored, 0.0, 1.0, 0.1)
    nbins = int(round((hi - lo) / step))

    def histogram(values: list[float]) -> list[float]:
        counts = [0] * nbins
        for v in values:
            counts[min(nbins - 1, max(0, int((v - lo) / step + 1e-9)))] += 1
        return [c / len(values) if values else 0.0 for c in counts]

    shares_f, shares_i = histogram(followed), histogram(ignored)
    peak = max(shares_f + shares_i + [0.01])
    y_step = 0.05 if peak <= 0.3 else 0.1
    y_hi = math.ceil(peak / y_step - 1e-9) * y_step

    width, height = 960, 340
    ml, mr, mt, mb = 70, 24, 24, 56
    left, right, top, bottom = ml, width - mr, mt, height - mb

    def sx(v: float) -> float:
        return left + (v - lo) / (hi - lo) * (right - left)

    def sy(v: float) -> float:
        return bottom - v / y_hi * (bottom - top)

    label = (f"Histograms of embedding cosines: {len(followed)} retrievals the judge called followed and "
             f"{len(ignored)} it called not followed")
    parts = [_svg_open(width, height, label)]
    for t in _ticks(0.0, y_hi, y_step):
        y = sy(t)
        parts.append(f'<line x1="{left}" y1="{_f(y)}" x2="{right}" y2="{_f(y)}" stroke="{GRID}"/>')
        parts.append(f'<text x="{left - 9}" y="{_f(y + 4)}" text-anchor="end">{round(t * 100):d}%</text>')
    bin_w = (right - left) / nbins
    for i in range(nbins):
        x0 = left + i * bin_w
        b_lo, b_hi = lo + i * step, lo + (i + 1) * step
        groups = ((shares_f, followed, BLUE, "judged followed"),
                  (shares_i, ignored, ORANGE, "judged not followed"))
        for j, (shares, values, colour, name) in enumerate(groups):
            if shares[i] <= 0:
                continue
            y = sy(shares[i])
            count = round(shares[i] * len(values))
            bar_w = (bin_w - 2) / 2
            parts.append(f'<rect x="{_f(x0 + 1 + j * bar_w)}" y="{_f(y)}" width="{_f(bar_w)}" '
                         f'height="{_f(bottom - y)}" fill="{colour}" fill-opacity="0.85">'
                         f'<title>{name}: {count} of {len(values)} ({shares[i]:.0%}) with cosine in '
                         f'[{b_lo:.2f}, {b_hi:.2f})</title></rect>')
    for t in _ticks(lo, hi, 0.1):
        x = sx(t)
        parts.append(f'<line x1="{_f(x)}" y1="{bottom}" x2="{_f(x)}" y2="{bottom + 5}" stroke="{INK}"/>')
        parts.append(f'<text x="{_f(x)}" y="{bottom + 19}" text-anchor="middle">{_tick_label(t)}</text>')
    parts.append(f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="{INK}"/>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="{INK}"/>')
    marks = sorted(((value, name, dash) for value, name, dash in
                    ((threshold, "threshold", "6 0"), (best, "best (learned)", "5 3"))
                    if value is not None and lo <= value <= hi), key=lambda m: m[0])
    for k, (value, name, dash) in enumerate(marks):
        x = sx(value)
        parts.append(f'<line x1="{_f(x)}" y1="{top - 8}" x2="{_f(x)}" y2="{bottom}" stroke="{INK}" '
                     f'stroke-width="1.5" stroke-dasharray="{dash}"/>')
        # two marks: left label to the left, right label to the right; one mark: away from the edge
        to_left = (k == 0 and len(marks) == 2) or (len(marks) == 1 and x > right - 120)
        anchor, dx = ("end", -5) if to_left else ("start", 5)
        parts.append(f'<text x="{_f(x + dx)}" y="{top + 4}" text-anchor="{anchor}" font-size="11.5" '
                     f'font-weight="600">{name} {value:.2f}</text>')
    parts.append(f'<text x="{_f((left + right) / 2)}" y="{height - 12}" text-anchor="middle" font-size="13" '
                 f'font-weight="600">cosine between tip and fix script (embedding leg)</text>')
    parts.append(f'<text transform="translate(16 {_f((top + bottom) / 2)}) rotate(-90)" text-anchor="middle" '
                 f'font-size="13" font-weight="600">share of the group</text>')
    parts.append("</svg>")

    def stats(values: list[float]) -> str:
        return f"n = {len(values)}" + (f", median {_median(values):.2f}" if values else "")

    legend = _legend([
        (f'<rect x="2" y="2" width="12" height="12" fill="{BLUE}"/>', f"judged followed ({stats(followed)})"),
        (f'<rect x="2" y="2" width="12" height="12" fill="{ORANGE}"/>',
         f"judged not followed ({stats(ignored)})"),
    ])
    missing = ""
    if not followed:
        missing = " The judge called no retrieval followed yet."
    elif not ignored:
        missing = " The judge called every retrieval followed so far."
    lines = []
    if threshold is not None:
        lines.append("the solid line is the embedding threshold in use")
    if best is not None:
        lines.append("the dashed line the threshold learned from the judge's labels")
    marks_text = (" " + "; ".join(lines).capitalize() + ".") if lines else ""
    caption = ("<b>Figure 2. Does the cosine separate what the judge saw?</b> Cosines of retrievals "
               "with both a judge verdict and a cosine, as a share of each group in bins of 0.05; the less "
               "the two overlap, the better the embedding leg stands in for the judge."
               + escape(marks_text) + missing + _skipped(skipped, "cosine", "NULL or NaN"))
    return _figure("fig-cosines", heading, legend + "".join(parts), caption)


# --- picture c: utility before and after ----------------------------------------------------------------
def _utility(data: AuditData) -> str:
    rows = []
    skipped = 0
    for tip_id, rule, outcome, hit, follow, attempts, misleading in data.tip_points:
        before, after = _num(outcome), _num(hit)
        if before is None or after is None:
            skipped += 1
            continue
        rows.append((tip_id, rule, before, after, _num(follow), attempts, bool(misleading)))
    rows.sort(key=lambda r: (-r[2], -r[3], str(r[0])))
    total = len(rows)
    shown = rows[:MAX_DUMBBELL_ROWS]
    heading = "Utility per tip: before and after follow-weighting"
    if not shown:
        body = '<p class="empty">No tip has both an outcome-only and a follow-weighted hit rate yet.</p>'
        caption = ("<b>Figure 3. What follow-weighting changes.</b> Nothing to draw yet."
                   + _skipped(skipped, "tip", "a rate is NULL"))
        return _figure("fig-utility", heading, body, caption)

    lo, hi = _nice_domain([v for r in shown for v in (r[2], r[3])], -0.2, 1.0, 0.2)
    row_h = 17
    label_w = 330
    width = 960
    ml, mr, mt, mb = label_w, 24, 40, 40
    left, right = ml, width - mr
    top = mt
    bottom = top + row_h * len(shown)
    height = bottom + mb

    def sx(v: float) -> float:
        return left + (v - lo) / (hi - lo) * (right - left)

    dropped = sum(1 for r in shown if r[3] < r[2] - 1e-9)
    raised = sum(1 for r in shown if r[3] > r[2] + 1e-9)
    label = (f"Dumbbell chart of {len(shown)} tips sorted by outcome-only hit rate: each row joins the "
             f"outcome-only hit rate to the follow-weighted hit rate; {dropped} tips lose credit, "
             f"{raised} gain")
    parts = [_svg_open(width, height, label)]
    for i in range(0, len(shown), 2):
        y = top + i * row_h
        parts.append(f'<rect x="0" y="{y}" width="{width}" height="{row_h}" fill="#f6f7f9"/>')
    for t in _ticks(lo, hi, 0.2):
        x = sx(t)
        colour, sw = (INK, "1.2") if abs(t) < 1e-9 else (GRID, "1")
        parts.append(f'<line x1="{_f(x)}" y1="{top}" x2="{_f(x)}" y2="{bottom}" stroke="{colour}" '
                     f'stroke-width="{sw}"/>')
        for y_text in (top - 8, bottom + 17):
            parts.append(f'<text x="{_f(x)}" y="{y_text}" text-anchor="middle">{_tick_label(t)}</text>')
    parts.append(f'<text x="{_f((left + right) / 2)}" y="{top - 25}" text-anchor="middle" font-size="13" '
                 f'font-weight="600">hit rate</text>')
    parts.append(f'<text x="8" y="{top - 8}" font-size="12" font-weight="600">tip \u00b7 rule</text>')
    for i, (tip_id, rule, before, after, follow, attempts, misleading) in enumerate(shown):
        cy = top + i * row_h + row_h / 2
        rule_text = str(rule)
        short = rule_text if len(rule_text) <= 42 else rule_text[:41] + "\u2026"
        weight = ' font-weight="700"' if misleading else ""
        fill = VERMILLION if misleading else INK
        mark = " \u25c6" if misleading else ""
        title = (f"tip {tip_id} \u00b7 rule {rule_text}\noutcome-only hit rate {before:.3f}\n"
                 f"follow-weighted hit rate {after:.3f}\nfollow rate {_r(follow)}\nattempts {attempts}"
                 + ("\nflagged misleading" if misleading else ""))
        parts.append(f"<g><title>{escape(title)}</title>")
        parts.append(f'<rect x="0" y="{_f(cy - row_h / 2)}" width="{width}" height="{row_h}" '
                     f'fill="transparent"/>')
        parts.append(f'<text x="8" y="{_f(cy + 4)}" font-size="11.5" fill="{fill}"{weight}>'
                     f'<tspan font-variant-numeric="tabular-nums">#{escape(str(tip_id))}</tspan> '
                     f'{escape(short)}{mark}</text>')
        x0, x1 = sx(before), sx(after)
        if abs(x1 - x0) > 0.5:
            colour = VERMILLION if after < before else BLUE
            parts.append(f'<line x1="{_f(x0)}" y1="{_f(cy)}" x2="{_f(x1)}" y2="{_f(cy)}" stroke="{colour}" '
                         f'stroke-width="2.2" stroke-opacity="0.55"/>')
        parts.append(f'<circle cx="{_f(x0)}" cy="{_f(cy)}" r="4.2" fill="#fff" stroke="{GREY}" '
                     f'stroke-width="1.8"/>')
        after_fill = BLUE if after >= before else VERMILLION
        parts.append(f'<circle cx="{_f(x1)}" cy="{_f(cy)}" r="4.2" fill="{after_fill}"/>')
        parts.append("</g>")
    parts.append("</svg>")
    legend = _legend([
        (f'<circle cx="8" cy="8" r="4.5" fill="#fff" stroke="{GREY}" stroke-width="1.8"/>',
         "before: outcome-only hit rate"),
        (f'<circle cx="8" cy="8" r="4.5" fill="{BLUE}"/>',
         "after: follow-weighted hit rate (kept or gained)"),
        (f'<circle cx="8" cy="8" r="4.5" fill="{VERMILLION}"/>',
         "after: follow-weighted hit rate (lost credit)"),
        (f'<text x="8" y="13" text-anchor="middle" font-size="13" fill="{VERMILLION}">\u25c6</text>',
         "flagged misleading"),
    ])
    more = (f" Only the first {len(shown)} of {total} tips are drawn; the tables list the rest."
            if total > len(shown) else "")
    plural = "" if dropped == 1 else "s"
    caption = (f"<b>Figure 3. What follow-weighting changes.</b> {len(shown)} tips sorted by outcome-only "
               f"hit rate (the ranker's order before DEF-27). A tip's credit moves from the hollow circle to "
               f"the filled one once each retrieval is weighted by whether the Worker followed it: {dropped} "
               f"tip{plural} lose credit, {raised} gain. Hit rates run from \u22121 to 1 "
               f"(a followed tip during a health failure scores below zero).{more}"
               + _skipped(skipped, "tip", "a rate is NULL"))
    return _figure("fig-utility", heading, legend + "".join(parts), caption)


# --- tables ---------------------------------------------------------------------------------------------
def _section_html(section: Section) -> str:
    out = [f'<section id="sec-{escape(section.key)}"><h2>{escape(section.title)}</h2>']
    if section.note:
        out.append(f'<p class="note">{escape(section.note)}</p>')
    if not section.rows:
        out.append(f'<p class="empty">{escape(section.empty)}</p></section>')
        return "".join(out)
    numeric = [all(row[i] is None or _is_number(row[i]) for row in section.rows)
               and any(_is_number(row[i]) for row in section.rows) for i in range(len(section.columns))]
    head = []
    for column, is_num in zip(section.columns, numeric):
        name = str(column)
        short = len(name) <= 14  # short names never wrap; long ones may break after '_'
        classes = " ".join(c for c in ("num" if is_num else "", "short" if short else "") if c)
        attr = f' class="{classes}"' if classes else ""
        head.append(f'<th scope="col"{attr}>{escape(name) if short else _breakable(name)}</th>')
    body = []
    for row in section.rows:
        cells = []
        for value, is_num in zip(row, numeric):
            cls, content = format_html_cell(value)
            if is_num and cls == "null":
                cls = "num"
            cells.append(f'<td class="{cls}">{content}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    out.append(f'<div class="scroll"><table><thead><tr>{"".join(head)}</tr></thead>'
               f'<tbody>{"".join(body)}</tbody></table></div></section>')
    return "".join(out)


# --- the page -------------------------------------------------------------------------------------------
def render_html(data: AuditData) -> str:
    """The whole audit as one self-contained HTML document (a str)."""
    scope = f"run {data.run_id}" if data.run_id else "all runs"
    generated = (data.generated_at.strftime("%Y-%m-%d %H:%M %Z").strip()
                 if isinstance(data.generated_at, datetime) else str(data.generated_at))
    title = f"ctxgraph audit \u2013 {data.skill} \u2013 {scope}"
    meta = [f"Skill <b>{escape(str(data.skill))}</b>", f"scope <b>{escape(scope)}</b>"]
    if data.rule_id:
        meta.append(f"rule <b>{escape(str(data.rule_id))}</b>")
    meta.append(f"generated <b>{escape(generated)}</b>")

    n_tips = len(data.tip_points)
    n_misleading = sum(1 for p in data.tip_points if p[6])
    n_judged = len(data.cosines_followed) + len(data.cosines_ignored)
    rates = [(_num(p[2]), _num(p[3])) for p in data.tip_points]
    lost = sum(1 for before, after in rates
               if before is not None and after is not None and after < before - 1e-9)
    kpis = [(n_tips, "tips with scored retrievals"), (n_misleading, "flagged misleading"),
            (lost, "lose credit when follow-weighted"),
            (n_judged, "retrievals with judge verdict and cosine")]
    kpi_html = "".join(f'<li><span class="v">{v}</span><span class="k">{escape(k)}</span></li>'
                       for v, k in kpis)

    toc = ['<li><a href="#pictures">Pictures</a></li>']
    toc += [f'<li><a href="#sec-{escape(s.key)}">{escape(s.title)}</a></li>' for s in data.sections]

    sep = " \u00b7 "
    csp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
    page = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{escape(title)}</title>",
        f"<style>{CSS}</style></head><body><main>",
        f'<header><h1>ctxgraph audit: {escape(str(data.skill))}</h1><p class="meta">{sep.join(meta)}</p>'
        f'<ul class="kpis">{kpi_html}</ul>'
        f'<nav aria-label="Contents"><ol>{"".join(toc)}</ol></nav></header>',
        '<section id="pictures"><h2>Pictures</h2>',
        '<p class="note">Hover a point or a row for its figures; every number is also in the tables '
        'below.</p>',
        _scatter(data),
        _cosines(data),
        _utility(data),
        "</section>",
    ]
    page += [_section_html(s) for s in data.sections]
    page.append('<footer>Generated by <code>ctxgraph audit --html</code>. The page is self-contained: it '
                'loads nothing and runs no scripts.</footer>')
    page.append("</main></body></html>")
    return "\n".join(page) + "\n"
