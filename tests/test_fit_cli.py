"""`ctxgraph fit` and `ctxgraph evict` as an operator runs them, on a skill of their own."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxgraph.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


@pytest.fixture
def skill(conn: psycopg.Connection) -> Iterator[str]:
    """A committed skill where M, followed in every failure beside H, is blamed and H is not."""
    name = f"fit_{uuid.uuid4().hex[:8]}"
    conn.execute("SELECT ctxgraph.add_skill(%s, 'graded')", (name,))
    conn.execute((ROOT / "tests" / "fixtures" / "factories.sql").read_text())
    m = conn.execute("SELECT tests.make_tip(%s, 'R-pair', 'tip M')", (name,)).fetchone()[0]
    h = conn.execute("SELECT tests.make_tip(%s, 'R-pair', 'tip H')", (name,)).fetchone()[0]
    for g in range(1, 13):
        attempt = conn.execute(
            "SELECT tests.make_attempt_with_retrievals(%s, %s, 'R-pair', 1, %s, %s, %s, '2026-11-20 10:00+00')",
            (name, f"pair-{g}", [m, h], g % 2 == 1, None if g % 2 == 1 else "clean_failure")).fetchone()[0]
        followed = [m, h] if g % 2 == 0 else [h]
        conn.execute("UPDATE ctxgraph.tip_retrievals SET tip_followed_llm = (tip_id = ANY (%s))"
                     " WHERE skill = %s AND attempt_id = %s", (followed, name, attempt))
    conn.commit()
    try:
        yield name
    finally:
        conn.rollback()
        conn.execute("SELECT ctxgraph.drop_skill(%s)", (name,))
        conn.commit()


def test_fit_fits_once_then_finds_nothing_to_do(skill: str, conn: psycopg.Connection) -> None:
    first = run_cli("fit", "--skill", skill)
    assert first.returncode == 0, first.stderr
    assert f"{skill}: fitted 2 tips with evidence (full; 24 scored retrievals)" in first.stdout
    assert "blame exact" in first.stdout and "was never fitted" in first.stdout
    assert f"fit {skill}: read 24 scored retrievals" in first.stderr  # the progress lines
    state = conn.execute("SELECT current FROM ctxgraph.fit_state(%s)", (skill,)).fetchone()[0]
    assert state
    again = run_cli("fit", "--skill", skill, "--quiet")
    assert again.returncode == 0 and "nothing to do, the stored fit is current" in again.stdout
    assert again.stderr == ""
    forced = run_cli("fit", "--skill", skill, "--full", "--quiet")
    assert forced.returncode == 0 and "fitted 2 tips with evidence (full;" in forced.stdout


def test_fit_after_new_evidence_is_incremental(skill: str, conn: psycopg.Connection) -> None:
    assert run_cli("fit", "--skill", skill, "--quiet").returncode == 0
    # A new tip, retrieved alone in one new attempt: its evidence is the only one that changed.
    tip = conn.execute("SELECT tests.make_tip(%s, 'R-other', 'tip N')", (skill,)).fetchone()[0]
    conn.execute("SELECT tests.make_attempt_with_retrievals(%s, 'other-1', 'R-other', 1, %s, true, NULL,"
                 " '2026-11-21 10:00+00')", (skill, [tip]))
    conn.commit()
    later = run_cli("fit", "--skill", skill)
    assert later.returncode == 0, later.stderr
    assert f"{skill}: fitted 3 tips with evidence (incremental, 1 tips refitted; 25 scored retrievals)" in later.stdout
    assert "1 tips' evidence changed since the stored fit" in later.stderr
    incremental = dict(conn.execute("SELECT tip_id, misleading_probability FROM ctxgraph.tip_effects WHERE skill = %s",
                                    (skill,)).fetchall())
    assert run_cli("fit", "--skill", skill, "--full", "--quiet").returncode == 0
    full = dict(conn.execute("SELECT tip_id, misleading_probability FROM ctxgraph.tip_effects WHERE skill = %s",
                             (skill,)).fetchall())
    assert incremental.keys() == full.keys()
    assert all(abs(incremental[t] - full[t]) <= 0.005 for t in full)


def test_evict_previews_then_applies(skill: str, conn: psycopg.Connection) -> None:
    preview = run_cli("evict", "--skill", skill)
    assert preview.returncode == 0, preview.stderr
    assert f"{skill}: would retire 1 tips" in preview.stdout
    assert "harmful when followed: misleading probability" in preview.stdout
    assert "fitted 2 tips" in preview.stderr, "a stale fit is refitted first"
    retired = conn.execute("SELECT count(*) FROM ctxgraph.tips WHERE skill = %s AND retired_at IS NOT NULL",
                           (skill,)).fetchone()[0]
    assert retired == 0, "a preview retires nothing"
    conn.rollback()
    applied = run_cli("evict", "--skill", skill, "--apply", "--quiet")
    assert applied.returncode == 0, applied.stderr
    assert f"{skill}: retired 1 tips" in applied.stdout
    body = conn.execute("SELECT body FROM ctxgraph.tips WHERE skill = %s AND retired_at IS NOT NULL", (skill,)).fetchone()
    assert body == ("tip M",)


def test_usage_errors_exit_2(skill: str) -> None:
    unknown = run_cli("fit", "--skill", "nosuch")
    assert unknown.returncode == 2 and "unknown skill 'nosuch'" in unknown.stderr
    naive = run_cli("fit", "--skill", skill, "--as-of", "2026-12-01T00:00:00")
    assert naive.returncode == 2 and "give the time zone too" in naive.stderr
    bad = run_cli("evict", "--skill", skill, "--as-of", "yesterday")
    assert bad.returncode == 2 and "not an ISO 8601 instant" in bad.stderr


def test_parameters_out_of_range_exit_2(skill: str, conn: psycopg.Connection) -> None:
    conn.execute("UPDATE ctxgraph.parameters SET value = 0.3 WHERE name = 'blame.judge_reliability'")
    conn.commit()
    try:
        result = run_cli("fit", "--skill", skill, "--quiet")
        assert result.returncode == 2 and "blame.* parameters out of range" in result.stderr
        assert conn.execute("SELECT count(*) FROM ctxgraph.tip_effects WHERE skill = %s", (skill,)).fetchone()[0] == 0
    finally:
        conn.rollback()
        conn.execute("UPDATE ctxgraph.parameters SET value = 0.9 WHERE name = 'blame.judge_reliability'")
        conn.commit()
