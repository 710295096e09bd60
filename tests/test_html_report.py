"""The HTML audit page: self-contained, escaped, three figures, and it renders in a real browser.

No database is needed: every test builds an :class:`AuditData` by hand.

The browser tests run Debian's ``chromium`` headless (``make test`` installs it through
``scripts/provision-system.sh``; without it they FAIL, they do not skip). Two facts are checked:

* the screenshot is not blank: the PNG Chromium writes is decoded with the standard library
  (zlib + struct, no Pillow) and must show many distinct colours, a fair share of non-white pixels and
  the figures' own colours (the blue points/bars and the vermillion misleading markers);
* the page logs nothing to the console. With ``--enable-logging=stderr --v=0`` Chromium copies every
  console message of the page to stderr as ``...:INFO:CONSOLE:<line>] "<message>", source: <url> (<line>)``
  (older builds: ``INFO:CONSOLE(<line>)``); uncaught exceptions arrive as ``"Uncaught Error: ..."``, and
  SVG attribute errors (``Error: <circle> attribute r: Expected length``) and Content-Security-Policy
  violations arrive the same way. Our page runs no script, so any CONSOLE line at all is a failure. This
  is simpler than driving the DevTools protocol (which needs a websocket client) and just as strict for
  a page that should be silent. Other stderr lines (D-Bus, GPU warnings of a container) are Chromium's own
  and ignored. A negative control (a page that throws ``new Error("boom")``) proves the detection works:
  if a Chromium build ever stopped copying console messages to stderr, that test fails rather than the
  check passing silently.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ctxgraph.html_report import render_html
from ctxgraph.reports import AuditData, Section

EVIL_BODY = 'Restart sshd <script>alert(1)</script> & check "quotes" \'too\''
EVIL_RULE = 'rule"><img src=x onerror=alert(2)>'
LONG_BODY = ("Restrict SSH MACs through the system crypto policy, not by hand: run "
             "`update-crypto-policies --set FIPS` (or DEFAULT plus a sub-policy). Do not edit "
             "/etc/ssh/ssh_config manually; the policy back-end is what OpenSSH reads. "
             "THE-END-OF-THE-LONG-BODY")


def tip_points() -> list[tuple]:
    return [
        # tip_id, rule_id, outcome_hit_rate, hit_rate, follow_rate, attempts, is_misleading
        (1, "(general)", 0.53, 0.0, 0.0, 10, False),
        (2, "(general)", 0.76, 0.0, 0.0, 5, True),
        (3, "(general)", 0.60, 0.0, 0.0, 3, True),
        (11, "harden_sshd_macs", 1.0, 0.5, 0.5, 2, False),
        (12, "harden_sshd_macs", 1.0, 1.0, 1.0, 1, False),
        (13, "harden_sshd_macs", 1.0, 1.0, 1.0, 1, False),  # same position as tip 12: fanned out
        (48, "set_firewalld_default_zone", 0.3, -0.2, 1.0, 2, False),
        (49, EVIL_RULE, -0.2, -0.2, 1.0, 2, False),
        (50, "fully_harmful", -1.0, -1.0, 1.0, 4, False),
        (60, "no_follow_rate_yet", 0.5, None, None, 1, False),  # skipped in every picture
    ]


def sections() -> list[Section]:
    return [
        Section("overview", "Overview: coverage per run",
                ["run_id", "attempts", "retrievals", "judge_verdicts", "followed"],
                [("run-6", 38, 133, 0, 48)], empty="no retrievals logged"),
        Section("ranking", "Ranker order for harden_sshd_macs",
                ["before", "after", "tip_id", "outcome_hit_rate", "hit_rate", "follow_rate", "retired",
                 "body"],
                [(1, 1, 12, 1.0, 1.0, 1.0, False, "Write a sub-policy module."),
                 (1, 4, 11, 1.0, 0.5, 0.5, True, LONG_BODY)],
                note="before = outcome-only; after = follow-weighted"),
        Section("misleading", "Misleading tips",
                ["tip_id", "rule_id", "outcome_hit_rate", "follow_rate", "body"],
                [(2, None, 0.76, 0.0, EVIL_BODY), (3, None, 0.6, 1 / 3, "Just restart sshd.")]),
        Section("eviction", "Eviction preview", ["tip_id", "reason"], [],
                empty="no tip has enough evidence against it"),
        Section("agreement", "Judge / embedding agreement",
                ["judged", "agreement", "kappa", "threshold", "best_threshold"],
                [(0, None, None, 0.6, None)], note="no retrieval has both a judge verdict and a cosine yet"),
    ]


def make_data(cosines: bool = False) -> AuditData:
    data = AuditData(skill="stig", run_id=None, rule_id="harden_sshd_macs",
                     generated_at=datetime(2026, 11, 29, 19, 14, tzinfo=timezone.utc),
                     sections=sections(), tip_points=tip_points(),
                     misleading_min_outcome=0.6, misleading_max_follow=0.34)
    if cosines:
        data.cosines_followed = [0.81, 0.74, 0.66, 0.69, 0.58, 0.91, 0.72]
        data.cosines_ignored = [0.12, 0.35, 0.41, 0.28, 0.52, 0.63, -0.04, 0.33, float("nan")]
    return data


def figure(page: str, fig_id: str) -> str:
    match = re.search(rf'<figure id="{fig_id}">(.*?)</figure>', page, re.S)
    assert match, f"figure {fig_id} missing"
    return match.group(1)


# --- the page as text ------------------------------------------------------------------------------------
def test_page_is_self_contained():
    page = render_html(make_data(cosines=True))
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(?:src|href|xlink:href)\s*=\s*["']?\s*(?:https?:)?//""", page, re.I), \
        "the page refers to a remote resource"
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"<link\b", page, re.I), "no stylesheet links: styles are inline"
    assert not re.search(r"<script\b", page, re.I), "the page runs no script"
    assert not re.search(r"@import|@font-face|url\(", page, re.I), "no fetched fonts or images from CSS"
    assert "<style>" in page
    assert "default-src 'none'" in page  # the browser itself refuses anything external


def test_untrusted_texts_are_escaped():
    data = make_data()
    data.skill = "stig<b>"
    page = render_html(data)
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img src=x" not in page  # the rule id went into SVG labels and tooltips escaped
    assert "rule&quot;&gt;&lt;img src=x onerror=alert(2)&gt;" in page
    assert "stig<b>" not in page and "stig&lt;b&gt;" in page
    assert "&amp; check &quot;quotes&quot;" in page


def test_every_svg_is_well_formed_and_accessible():
    page = render_html(make_data(cosines=True))
    svgs = re.findall(r"<svg\b.*?</svg>", page, re.S)
    assert len(svgs) >= 3
    for svg in svgs:
        root = ET.fromstring(svg)  # raises on a broken attribute or an unescaped text
        if root.get("aria-hidden") != "true":
            assert root.get("role") == "img" and root.get("aria-label"), svg[:120]
    for fig_id in ("fig-scatter", "fig-cosines", "fig-utility"):
        body = figure(page, fig_id)
        assert "<figcaption>" in body and '<svg viewBox' in body and 'role="img"' in body


def test_three_figures_and_the_empty_judge_sentence():
    page = render_html(make_data(cosines=False))
    assert page.count("<figure ") == 3
    cosines = figure(page, "fig-cosines")
    assert "No judge verdicts exist yet" in cosines
    assert "<svg" not in cosines, "no empty chart when the judge never ran"
    assert "<figcaption>" in cosines


def test_cosine_histograms_with_legend_and_thresholds():
    page = render_html(make_data(cosines=True))
    cosines = figure(page, "fig-cosines")
    assert "No judge verdicts exist yet" not in cosines
    assert "judged followed (n = 7, median 0.72)" in cosines
    assert "judged not followed (n = 8" in cosines
    assert "1 cosine skipped (NULL or NaN)" in cosines
    assert "threshold 0.60" in cosines  # from the agreement section
    assert cosines.count("<rect") > 5


def test_scatter_shades_the_misleading_corner_and_gives_every_point_a_tooltip():
    page = render_html(make_data())
    scatter = figure(page, "fig-scatter")
    assert "misleading corner" in scatter
    assert "outcome \u2265 0.60, follow \u2264 0.34" in scatter
    titles = re.findall(r"<title>(tip \d+ .*?)</title>", scatter, re.S)
    assert len(titles) == 9  # ten tips, one without rates
    assert any(t.startswith("tip 2 \u00b7 rule (general)") and "flagged misleading" in t for t in titles)
    assert "1 tip skipped" in scatter
    assert scatter.count("<path") == 2 + 1  # two flagged tips as diamonds, plus the legend's diamond
    # tips 12 and 13 share (1.0, 1.0) but are drawn apart
    positions = re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)" r="4.3"', scatter)
    assert len(positions) == len(set(positions)) == 7


def test_utility_dumbbell_sorted_by_outcome_and_axis_down_to_minus_one():
    page = render_html(make_data())
    utility = figure(page, "fig-utility")
    order = [int(t) for t in re.findall(r"<title>tip (\d+) ", utility)]
    assert order == [12, 13, 11, 2, 3, 1, 48, 49, 50]  # outcome-only rate, then follow-weighted
    assert "\u22121.0" in utility and "\u22120.2" in utility and ">1.0<" in utility
    assert "1 tip skipped (a rate is NULL)" in utility
    assert "5 tips lose credit, 0 gain" in utility


def test_tables_format_values():
    page = render_html(make_data())
    assert '<td class="num">0.333</td>' in page  # 3 decimals, right-aligned
    assert '<td class="bool">yes</td>' in page and '<td class="bool">no</td>' in page
    assert 'title="NULL">\u2013</span>' in page  # NULL as an en dash
    assert "THE-END-OF-THE-LONG-BODY" in page  # whole texts, never cut
    assert '<th scope="col" class="num short">attempts</th>' in page
    assert "no tip has enough evidence against it" in page
    assert "before = outcome-only; after = follow-weighted" in page
    assert "2026-11-29 19:14 UTC" in page and "all runs" in page


def test_missing_thresholds_and_no_points_do_not_break_the_page():
    data = AuditData(skill="cve", run_id="run-1", rule_id=None, generated_at=datetime.now(timezone.utc),
                     tip_points=[(1, "r", None, None, None, 0, False)],
                     misleading_min_outcome=None, misleading_max_follow=None)  # type: ignore[arg-type]
    page = render_html(data)
    assert page.count("<figure ") == 3
    assert "no corner is drawn" in page
    assert "No tip has both an outcome-only and a follow-weighted hit rate yet" in page
    for svg in re.findall(r"<svg\b.*?</svg>", page, re.S):
        ET.fromstring(svg)


# --- the page in a real browser -------------------------------------------------------------------------
CONSOLE_LINE = re.compile(r"CONSOLE[:(]|Uncaught")


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if path is None:
        pytest.fail("chromium is not installed: run `make test`, which installs it "
                    "(scripts/provision-system.sh), or `apt-get install --no-install-recommends chromium`")
    return path


def render_in_chromium(chromium: str, html: str, tmp_path: Path, name: str) -> tuple[Path, list[str]]:
    """Screenshot an HTML text with headless Chromium; return the PNG and the page's console lines."""
    page = tmp_path / f"{name}.html"
    page.write_text(html, encoding="utf-8")
    png = tmp_path / f"{name}.png"
    profile = tmp_path / f"{name}-profile"
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--hide-scrollbars", "--force-color-profile=srgb", f"--user-data-dir={profile}",
               f"--screenshot={png}", "--window-size=1280,2000", "--enable-logging=stderr", "--v=0",
               page.resolve().as_uri()]
    result = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, f"chromium failed ({result.returncode}):\n{result.stderr[-3000:]}"
    assert png.is_file() and png.stat().st_size > 0, f"no screenshot written:\n{result.stderr[-3000:]}"
    return png, [line for line in result.stderr.splitlines() if CONSOLE_LINE.search(line)]


def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and RGB rows of an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat.append(chunk)
        elif kind == b"IEND":
            break
    assert header is not None, "PNG without IHDR"
    width, height, depth, colour_type, _, _, interlace = header
    assert depth == 8 and colour_type in (2, 6) and interlace == 0, f"unsupported PNG layout {header}"
    bpp = 3 if colour_type == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    prev = bytearray(stride)
    rows: list[bytes] = []
    at = 0
    for _ in range(height):
        kind, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        at += 1 + stride
        if kind == 1:  # Sub
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif kind == 2:  # Up
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif kind == 3:  # Average
            for x in range(stride):
                left = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((left + prev[x]) >> 1)) & 255
        elif kind == 4:  # Paeth
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b, c = prev[x], (prev[x - bpp] if x >= bpp else 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line) if bpp == 3 else bytes(v for i, v in enumerate(line) if i % 4 != 3))
        prev = line
    return width, height, rows


def pixel_stats(png: Path) -> tuple[int, float, dict[tuple[int, int, int], int]]:
    width, height, rows = decode_png(png.read_bytes())
    counts: dict[tuple[int, int, int], int] = {}
    for row in rows:
        for x in range(0, len(row), 3):
            key = (row[x], row[x + 1], row[x + 2])
            counts[key] = counts.get(key, 0) + 1
    white = counts.get((255, 255, 255), 0)
    return len(counts), 1 - white / (width * height), counts


def near(counts: dict[tuple[int, int, int], int], rgb: tuple[int, int, int], tolerance: int = 16) -> int:
    return sum(n for c, n in counts.items() if all(abs(a - b) <= tolerance for a, b in zip(c, rgb)))


def test_page_renders_in_chromium_without_console_errors(chromium, tmp_path):
    png, console = render_in_chromium(chromium, render_html(make_data(cosines=True)), tmp_path, "audit")
    assert console == [], "the page logged to the console:\n" + "\n".join(console)
    distinct, non_white, counts = pixel_stats(png)
    assert distinct > 200, f"screenshot looks blank: only {distinct} distinct colours"
    assert non_white > 0.03, f"screenshot looks blank: {non_white:.1%} non-white pixels"
    assert near(counts, (0xD5, 0x5E, 0x00)) > 50, "no vermillion pixels: misleading markers not drawn"
    assert near(counts, (0x00, 0x72, 0xB2)) > 50, "no blue pixels: the points and bars were not drawn"


def test_page_without_judge_verdicts_renders_without_console_errors(chromium, tmp_path):
    png, console = render_in_chromium(chromium, render_html(make_data(cosines=False)), tmp_path, "nojudge")
    assert console == [], "the page logged to the console:\n" + "\n".join(console)
    distinct, non_white, _ = pixel_stats(png)
    assert distinct > 200 and non_white > 0.03


def test_console_error_detection_catches_a_throwing_page(chromium, tmp_path):
    """Negative control: without it a Chromium that stopped logging would make the check above vacuous."""
    html = ('<!DOCTYPE html><html><head><meta charset="utf-8"><title>boom</title></head>'
            '<body><p>control</p><script>throw new Error("boom")</script></body></html>')
    _, console = render_in_chromium(chromium, html, tmp_path, "boom")
    assert any("Uncaught" in line and "boom" in line for line in console), console


def test_blank_detection_catches_a_blank_page(chromium, tmp_path):
    """Negative control for the pixel check: an empty white page must not pass as drawn."""
    blank = "<!DOCTYPE html><html><body></body></html>"
    png, console = render_in_chromium(chromium, blank, tmp_path, "blank")
    assert console == []
    distinct, non_white, _ = pixel_stats(png)
    assert distinct <= 200 or non_white <= 0.03
