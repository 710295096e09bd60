"""The attribution fit in numpy (ctxgraph.fit): the model's numbers on worlds a reader can check.

Each world is written through the write path (the pgTAP factories, loaded into the test's
transaction and rolled back with it), read back by ``ctxgraph.fit_evidence`` and fitted in numpy.
The expected values are the model's, worked by hand where the comments show the arithmetic; the
same worlds fitted by the PL/pgSQL fit gave the same numbers (``test_same_numbers_as_the_sql_fit``
holds the two to it while both exist).
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import psycopg
import pytest

from ctxgraph.fit import fit_skill
from ctxgraph.fit.store import write_fit

ROOT = Path(__file__).resolve().parent.parent
AS_OF = datetime(2026, 12, 1, tzinfo=timezone.utc)


@pytest.fixture
def db(conn: psycopg.Connection) -> psycopg.Connection:
    """The test's connection with the pgTAP factories loaded (rolled back at the end)."""
    for name in ("factories.sql", "factories_consumers.sql"):
        conn.execute((ROOT / "tests" / "fixtures" / name).read_text())
    return conn


def scalar(conn: psycopg.Connection, query: str, params=()):
    return conn.execute(query, params).fetchone()[0]


def set_parameter(conn: psycopg.Connection, name: str, value: float) -> None:
    assert conn.execute("UPDATE ctxgraph.parameters SET value = %s WHERE name = %s", (value, name)).rowcount == 1


def tip(conn: psycopg.Connection, skill: str, rule: str, body: str) -> int:
    return scalar(conn, "SELECT tests.make_tip(%s, %s, %s)", (skill, rule, body))


def attempt(conn: psycopg.Connection, skill: str, run: str, rule: str, tips: list[int], followed: list[int],
            passed: bool, failure: str = "clean_failure") -> int:
    """One first-try attempt in a run of its own, the judge's verdict per tip: followed when listed."""
    attempt_id = scalar(
        conn,
        "SELECT tests.make_attempt_with_retrievals(%s, %s, %s, 1, %s, %s, %s, '2026-11-20 10:00+00')",
        (skill, run, rule, tips, passed, None if passed else failure),
    )
    conn.execute(
        "UPDATE ctxgraph.tip_retrievals SET tip_followed_llm = (tip_id = ANY (%s)) WHERE skill = %s AND attempt_id = %s",
        (followed, skill, attempt_id),
    )
    return attempt_id


def blame(fit, tip_id: int) -> float:
    return fit.misleading(tip_id)


def row(fit, tip_id: int) -> dict:
    i = int(np.searchsorted(fit.tip_id, tip_id))
    return {"effect": fit.effect[i], "std_error": fit.std_error[i], "upper": fit.upper_bound[i],
            "lower": fit.lower_bound[i], "method": fit.method[i], "component": fit.component_tips[i],
            "attempts": fit.attempts[i]}


# ---------------------------------------------------------------------------------------------
# By hand. One sweep (blame.max_sweeps 1) starts from pi 0.2, eps 0.001; one grid point each fixes
# the rule's pass rate and its harm share h at 0.5. A judge verdict is right 9 times in 10. A's and
# B's attempts share four runs, one judged followed and one ignored in each, so half the verdicts of
# every run say followed: the base rate of following is (0.5 - 0.1) / 0.8 = 0.5, and a tip judged
# followed was followed with chance 0.9, one judged ignored with 0.1.
# Tip A: followed in two clean failures, ignored in two passes.
#   not misleading: passes 0.5 * 0.5, failures (0.5 * 0.999)^2                       = 0.0623750625
#   misleading:     passes (0.9 * 0.5)^2, failures (0.9 * 0.5 + 0.1 * 0.5 * 0.999)^2 = 0.0506148755
#   P(misleading) = 0.2 * 0.0506148755 / (0.2 * 0.0506148755 + 0.8 * 0.0623750625) = 0.168652
# Tip B: the same, but its failures broke the system: (0.5 * 0.001)^2 against
#   (0.9 * 0.5 + 0.1 * 0.5 * 0.001)^2, so P(misleading) = 0.999994.
# C and D, two tips of one rule in both of its attempts: the block weighs their four subsets with
# each attempt's factor M = product over the subset of (1 - f). Run hand-cd-1: C judged followed
# (f 0.9), D ignored (0.1), a health failure, (1 - M) h + M (1 - q) eps; run hand-cd-2: C ignored,
# D followed, a pass, M q. Prior 0.8 / 0.2 per tip:
#   none 0.64 * 0.0005  * 0.5   = 0.00016         C    0.16 * 0.45005  * 0.45  = 0.0324036
#   D    0.16 * 0.05045 * 0.05  = 0.0004036       both 0.04 * 0.455045 * 0.045 = 0.000819081
#   P(C) = (0.0324036 + 0.000819081) / 0.033786281 = 0.983319; P(D) = 0.036189.
# ---------------------------------------------------------------------------------------------
def test_by_hand(db: psycopg.Connection) -> None:
    for name in ("blame.base_rate_points", "blame.harm_share_points", "blame.max_sweeps"):
        set_parameter(db, name, 1)
    a = tip(db, "stig", "R-hand-a", "tip A")
    b = tip(db, "stig", "R-hand-b", "tip B")
    for g in range(1, 5):
        attempt(db, "stig", f"hand-{g}", "R-hand-a", [a], [a] if g <= 2 else [], g > 2)
        attempt(db, "stig", f"hand-{g}", "R-hand-b", [b], [b] if g > 2 else [], g <= 2, "health_failure")
    fit = fit_skill(db, "stig", AS_OF)
    assert round(blame(fit, a), 6) == 0.168652
    assert round(blame(fit, b), 6) == 0.999994
    c = tip(db, "stig", "R-hand-cd", "tip C")
    d = tip(db, "stig", "R-hand-cd", "tip D")
    attempt(db, "stig", "hand-cd-1", "R-hand-cd", [c, d], [c], False, "health_failure")
    attempt(db, "stig", "hand-cd-2", "R-hand-cd", [c, d], [d], True)
    fit = fit_skill(db, "stig", AS_OF)
    assert (round(blame(fit, c), 6), round(blame(fit, d), 6)) == (0.983319, 0.036189)


def explaining_away_world(db: psycopg.Connection) -> dict[str, int]:
    """M and H always retrieved together, a rule that fails for everyone, two tips never apart."""
    t: dict[str, int] = {}
    # R-pair (cve): H followed in all 12 attempts, M in the even ones, which all fail.
    t["m"] = tip(db, "cve", "R-pair", "tip M")
    t["h"] = tip(db, "cve", "R-pair", "tip H")
    for g in range(1, 13):
        attempt(db, "cve", f"pair-{g}", "R-pair", [t["m"], t["h"]], [t["m"], t["h"]] if g % 2 == 0 else [t["h"]],
                g % 2 == 1)
    # R-hard (cve): all ten attempts fail cleanly, whoever was followed.
    t["c"] = tip(db, "cve", "R-hard", "tip C")
    t["d"] = tip(db, "cve", "R-hard", "tip D")
    t["e"] = tip(db, "cve", "R-hard", "tip E")
    for g in range(1, 11):
        followed = ([t["c"]] if g % 2 == 0 else []) + ([t["d"]] if g % 3 == 0 else []) + ([t["e"]] if g % 5 == 0 else [])
        attempt(db, "cve", f"hard-{g}", "R-hard", [t["c"], t["d"], t["e"]], followed, False)
    # R-same (stig): S1 and S2 followed together in the attempts that broke the system.
    t["s1"] = tip(db, "stig", "R-same", "tip S1")
    t["s2"] = tip(db, "stig", "R-same", "tip S2")
    for g in range(1, 9):
        attempt(db, "stig", f"same-{g}", "R-same", [t["s1"], t["s2"]], [t["s1"], t["s2"]] if g % 2 == 0 else [],
                g % 2 == 1, "health_failure")
    return t


def test_explaining_away(db: psycopg.Connection) -> None:
    t = explaining_away_world(db)
    cve = fit_skill(db, "cve", AS_OF)
    stig = fit_skill(db, "stig", AS_OF)
    assert blame(cve, t["m"]) > 0.9, "M, followed in every failure, is blamed"
    assert blame(cve, t["h"]) < 0.05, "H, followed beside M in every failure and in every pass, is not"
    assert cve.blame_summary["blame_method"] == "exact" and cve.blame_summary["blame_converged"]
    assert "fitted_misleading_share" in cve.blame_summary and "fitted_harm_share_mixture" in cve.blame_summary
    assert all(blame(cve, t[k]) < 0.5 for k in "cde"), "a rule that fails for everyone: nobody is blamed"
    assert blame(cve, t["c"]) < blame(cve, t["m"]) - 0.5
    assert blame(stig, t["s1"]) == blame(stig, t["s2"]) > 0.9, "S1 and S2, never apart, share one probability"
    # The effects see the same: H helps, M's upper bound is below zero.
    assert row(cve, t["h"])["effect"] > 0 and row(cve, t["m"])["upper"] < 0
    # Members of one column share its support: S2 reads S1's.
    assert stig.co_followed_tips[np.searchsorted(stig.tip_id, t["s2"])] == 2


def test_work_budget(db: psycopg.Connection) -> None:
    """One sweep over cve weighs subsets x attempts x 15 grid cells: R-pair 2^2 x 12 x 15 = 720 and
    R-hard 2^3 x 10 x 15 = 1,200. Under 1,700 the blocks shrink to one tip each (720 + 3 x 2 x 10 x
    15 = 1,620); under 1,000 not even that fits, and the rules take point estimates (mean field)."""
    t = explaining_away_world(db)
    set_parameter(db, "blame.max_work", 1700)
    fit = fit_skill(db, "cve", AS_OF)
    assert (fit.blame_summary["blame_block_tips"], fit.blame_summary["blame_method"]) == (1, "partitioned")
    assert blame(fit, t["m"]) > 0.5
    set_parameter(db, "blame.max_work", 1000)
    fit = fit_skill(db, "cve", AS_OF)
    assert fit.blame_summary["blame_method"] == "mean_field" and fit.blame_summary["blame_converged"]
    assert blame(fit, t["m"]) > 0.9 and blame(fit, t["h"]) < 0.05
    assert all(blame(fit, t[k]) < 0.5 for k in "cde")
    assert fit.blame_summary["blame_moving_tips"] == 0 and fit.blame_summary["blame_last_tip_change"] < 1e-4
    set_parameter(db, "blame.max_sweeps", 1)
    fit = fit_skill(db, "cve", AS_OF)
    assert not fit.blame_summary["blame_converged"] and fit.blame_summary["blame_sweeps"] == 1
    assert fit.blame_summary["blame_moving_tips"] > 0 and fit.blame_summary["blame_last_tip_change"] > 1e-3


def test_cosine_beside_the_judge(db: psycopg.Connection) -> None:
    """Rule R-bg's 40 attempts teach the fit how far this skill's cosine tells followed (near 0.8)
    from ignored (near 0.4). Rule R-k: N judged followed in all 12 attempts; K judged ignored in
    all, but its cosine says the failing (even) attempts took it (0.9) and the passing ones did not."""
    db.execute("SELECT ctxgraph.add_skill('web', 'binary')")
    g1, g2 = tip(db, "web", "R-bg", "tip G1"), tip(db, "web", "R-bg", "tip G2")
    k, n = tip(db, "web", "R-k", "tip K"), tip(db, "web", "R-k", "tip N")
    for g in range(1, 41):
        a = scalar(db, "SELECT tests.make_attempt_with_retrievals('web', %s, 'R-bg', 1, %s, %s, %s, '2026-11-20 10:00+00')",
                   (f"bg-{g}", [g1, g2], g % 4 < 2, "clean_failure" if g % 4 >= 2 else None))
        for t_id, followed in ((g1, g % 2 == 0), (g2, g % 3 == 0)):
            cosine = (0.8 if followed else 0.4) + 0.1 * math.sin(g * 7 + t_id)
            db.execute("SELECT tests.set_follow('web', %s, %s, %s, %s)", (a, followed, cosine, [t_id]))
    for g in range(1, 13):
        a = scalar(db, "SELECT tests.make_attempt_with_retrievals('web', %s, 'R-k', 1, %s, %s, %s, '2026-11-20 10:00+00')",
                   (f"k-{g}", [k, n], g % 2 == 1, "clean_failure" if g % 2 == 0 else None))
        db.execute("SELECT tests.set_follow('web', %s, false, %s, %s)", (a, 0.9 if g % 2 == 0 else 0.3, [k]))
        db.execute("SELECT tests.set_follow('web', %s, true, 0.8, %s)", (a, [n]))
    # A judge that is never wrong: the cosine's normals are the two verdicts' own means.
    set_parameter(db, "blame.judge_reliability", 1)
    fit = fit_skill(db, "web", AS_OF)
    means = db.execute("SELECT avg(tip_followed_emb) FILTER (WHERE tip_followed_llm),"
                       " avg(tip_followed_emb) FILTER (WHERE NOT tip_followed_llm)"
                       " FROM ctxgraph.tip_retrievals WHERE skill = 'web'").fetchone()
    normals = fit.blame_summary["follow_cosine"]
    assert (normals["followed_mean"], normals["ignored_mean"]) == (round(means[0], 6), round(means[1], 6))
    set_parameter(db, "blame.judge_reliability", 0.9)
    fit = fit_skill(db, "web", AS_OF)
    assert blame(fit, k) > 0.9 and blame(fit, n) < 0.05, "the cosine sharpens the judge: K is blamed"
    set_parameter(db, "blame.cosine_with_judge", 0)
    fit = fit_skill(db, "web", AS_OF)
    assert blame(fit, k) < 0.5 and fit.blame_summary["follow_cosine"] is None
    set_parameter(db, "blame.cosine_with_judge", 1)
    db.execute("UPDATE ctxgraph.tip_retrievals SET tip_followed_emb = 0.5 WHERE skill = 'web'")
    fit = fit_skill(db, "web", AS_OF)
    assert blame(fit, k) < 0.5 and fit.blame_summary["follow_cosine"] is None, "a constant cosine says nothing"


def test_overwhelming_evidence(db: psycopg.Connection) -> None:
    """X followed in all 150 failures of R-sure, each of which broke the system, and in none of its
    150 passes: the other subsets' likelihoods fall below e^-745, and the fit must survive it."""
    x, y, z = (tip(db, "stig", "R-sure", f"tip {n}") for n in "XYZ")
    for g in range(1, 301):
        followed = ([x] if g % 2 == 0 else []) + ([y] if g % 3 == 0 else []) + ([z] if g % 5 == 0 else [])
        attempt(db, "stig", f"sure-{g}", "R-sure", [x, y, z], followed, g % 2 == 1, "health_failure")
    fit = fit_skill(db, "stig", AS_OF)
    assert blame(fit, x) == 1 and blame(fit, y) < 0.01 and blame(fit, z) < 0.01


@pytest.mark.parametrize(("name", "value"), [("blame.judge_reliability", 0.3), ("blame.cosine_with_judge", 0.5),
                                             ("effects.ridge_lambda", 0), ("effects.max_iterations", 0)])
def test_parameters_out_of_range_are_refused(db: psycopg.Connection, name: str, value: float) -> None:
    t = tip(db, "stig", "R-p", "tip P")
    attempt(db, "stig", "p-1", "R-p", [t], [t], True)
    set_parameter(db, name, value)
    with pytest.raises(ValueError, match="ctxgraph: (blame|effects)"):
        fit_skill(db, "stig", AS_OF)


def linked_world(db: psycopg.Connection) -> list[int]:
    """Four rules of three tips, 30 attempts each; every attempt also retrieves one tip of the next
    rule, so the twelve tips form one group. Tip 1 of each rule hurts, tip 3 helps (fixed hashes)."""
    tips = {(r, k): tip(db, "stig", f"bw-{r}", f"blockwise tip {r}.{k}") for r in range(1, 5) for k in range(1, 4)}
    rng = np.random.default_rng(7)
    for r in range(1, 5):
        for g in range(1, 31):
            shown = [tips[(r, k)] for k in range(1, 4)] + [tips[(r % 4 + 1, 1 + g % 3)]]
            followed = [t_id for t_id in shown if rng.random() < 0.5]
            kinds = [k for (rr, k), t_id in tips.items() if t_id in followed]
            p = 0.55 - 0.35 * kinds.count(1) + 0.25 * kinds.count(3)
            attempt(db, "stig", f"bw-{r}-{g}", f"bw-{r}", shown, followed, rng.random() < p)
    return sorted(tips.values())


def test_blockwise_equals_exact(db: psycopg.Connection) -> None:
    """A group over effects.max_component_tips gets the same effects, and std errors of its rule
    blocks with the others held fixed: positive and at most the exact ones."""
    tips = linked_world(db)
    exact = fit_skill(db, "stig", AS_OF)
    assert all(row(exact, t)["method"] == "exact" and row(exact, t)["component"] == 12 for t in tips)
    set_parameter(db, "effects.max_component_tips", 1)
    blockwise = fit_skill(db, "stig", AS_OF)
    z = blockwise.effect_parameters["effects.bound_z"]
    for t in tips:
        e, b = row(exact, t), row(blockwise, t)
        assert b["method"] == "blockwise" and b["component"] == 12
        assert abs(b["effect"] - e["effect"]) < 1e-6
        assert 0 < b["std_error"] <= e["std_error"] + 1e-9
        assert abs(b["upper"] - (b["effect"] + z * b["std_error"])) < 1e-12
    assert blockwise.effect_parameters["effects_converged"]


def test_same_numbers_as_the_sql_fit(db: psycopg.Connection) -> None:
    """While the PL/pgSQL fit exists, the two agree on a linked world and the explaining-away worlds,
    exact, partitioned and in the mean field."""
    if scalar(db, "SELECT to_regprocedure('ctxgraph.refresh_tip_effects(text, timestamptz)') IS NULL"):
        pytest.skip("the PL/pgSQL fit is gone")
    linked_world(db)
    explaining_away_world(db)
    for settings in ({}, {"blame.max_block_tips": 1, "effects.max_component_tips": 1}, {"blame.max_work": 100}):
        for name, value in settings.items():
            set_parameter(db, name, value)
        for skill in ("stig", "cve"):
            fit = fit_skill(db, skill, AS_OF)
            db.execute("SELECT ctxgraph.refresh_tip_effects(%s, %s)", (skill, AS_OF))
            stored = db.execute("SELECT tip_id, effect, std_error, misleading_probability, parameters"
                                " FROM ctxgraph.tip_effects WHERE skill = %s ORDER BY tip_id", (skill,)).fetchall()
            for tip_id, effect, std_error, misleading, parameters in stored:
                i = int(np.searchsorted(fit.tip_id, tip_id))
                assert fit.tip_id[i] == tip_id
                if effect is None:
                    assert math.isnan(fit.effect[i])
                    continue
                assert abs(fit.effect[i] - effect) < 1e-6, (settings, skill, tip_id)
                assert abs(fit.std_error[i] - std_error) < 1e-5
                assert abs(fit.misleading_probability[i] - misleading) < 1e-6, (settings, skill, tip_id)
                assert fit.blame_summary["blame_method"] == parameters["blame_method"]


def test_write_fit(db: psycopg.Connection) -> None:
    """write_fit replaces the skill's rows whole and records the fit; ensure_tip_effects then reuses it."""
    t = explaining_away_world(db)
    fit = fit_skill(db, "cve", AS_OF)
    assert write_fit(db, fit) == 5
    stored = dict(db.execute("SELECT tip_id, misleading_probability FROM ctxgraph.tip_effects WHERE skill = 'cve'").fetchall())
    assert set(stored) == set(int(x) for x in fit.tip_id)
    assert abs(stored[t["m"]] - blame(fit, t["m"])) < 1e-15
    parameters = scalar(db, "SELECT parameters FROM ctxgraph.tip_effects WHERE tip_id = %s", (t["m"],))
    assert parameters["blame_method"] == "exact" and parameters["effects.ridge_lambda"] == 0.5
    assert scalar(db, "SELECT evidence_version FROM ctxgraph.tip_effect_fits WHERE skill = 'cve'") == fit.evidence_version
    fitted_at = scalar(db, "SELECT max(fitted_at) FROM ctxgraph.tip_effects WHERE skill = 'cve'")
    db.execute("SELECT ctxgraph.ensure_tip_effects('cve', %s)", (AS_OF,))
    assert scalar(db, "SELECT max(fitted_at) FROM ctxgraph.tip_effects WHERE skill = 'cve'") == fitted_at


def test_write_refuses_an_incomplete_fit(db: psycopg.Connection) -> None:
    explaining_away_world(db)
    fit = fit_skill(db, "cve", AS_OF)
    write_fit(db, fit)
    before = db.execute("SELECT tip_id, misleading_probability FROM ctxgraph.tip_effects WHERE skill = 'cve' ORDER BY 1").fetchall()
    db.execute("SELECT ctxgraph.tip_fit_staging()")
    db.execute("INSERT INTO pg_temp.ctxgraph_tip_fit (tip_id, attempts, followed_attempts, method, evidence_version)"
               " VALUES (%s, 0, 0, 'no_evidence', 0)", (int(fit.tip_id[0]),))
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="has no staged row"):
        with db.transaction():
            db.execute("SELECT ctxgraph.write_tip_fit('cve', %s, 1, '{}', '{}')", (AS_OF,))
    after = db.execute("SELECT tip_id, misleading_probability FROM ctxgraph.tip_effects WHERE skill = 'cve' ORDER BY 1").fetchall()
    assert after == before, "nothing was written"
