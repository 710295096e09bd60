"""The attribution fit in numpy (ctxgraph.fit): the model's numbers on worlds a reader can check.

Each world is written through the write path (the pgTAP factories, loaded into the test's
transaction and rolled back with it), read back by ``ctxgraph.fit_evidence`` and fitted in numpy.
The expected values are the model's, worked by hand where the comments show the arithmetic; the
same worlds fitted by the PL/pgSQL fit gave the same numbers (``test_same_numbers_as_the_sql_fit``
holds the two to it while both exist).
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import psycopg
import pytest

from ctxgraph.fit import ensure_fit, fit_skill, fit_state
from ctxgraph.fit.blame import follow_chance
from ctxgraph.fit.store import write_fit
from fit_worlds import attempt, blame, explaining_away_world, linked_world, row, scalar, set_parameter, tip

ROOT = Path(__file__).resolve().parent.parent
AS_OF = datetime(2026, 12, 1, tzinfo=timezone.utc)
G, B = "fit_graded", "fit_binary"


@pytest.fixture
def db(conn: psycopg.Connection) -> psycopg.Connection:
    """The test's connection with the pgTAP factories loaded and two skills of its own, a graded one
    (G, as stig) and a binary one (B, as cve), whatever other tests left in stig and cve (all rolled
    back at the end)."""
    for name in ("factories.sql", "factories_consumers.sql"):
        conn.execute((ROOT / "tests" / "fixtures" / name).read_text())
    conn.execute("SELECT ctxgraph.add_skill(%s, 'graded'), ctxgraph.add_skill(%s, 'binary')", (G, B))
    # The model as told: the judge's reliability and the failure rate of a followed misleading tip
    # taken as configured (test_fitted_nuisances fits them).
    conn.execute("UPDATE ctxgraph.parameters SET value = 0"
                 " WHERE name IN ('blame.fit_judge_reliability', 'blame.fit_misleading_failure')")
    return conn


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
    a = tip(db, G, "R-hand-a", "tip A")
    b = tip(db, G, "R-hand-b", "tip B")
    for g in range(1, 5):
        attempt(db, G, f"hand-{g}", "R-hand-a", [a], [a] if g <= 2 else [], g > 2)
        attempt(db, G, f"hand-{g}", "R-hand-b", [b], [b] if g > 2 else [], g <= 2, "health_failure")
    fit = fit_skill(db, G, AS_OF)
    assert round(blame(fit, a), 6) == 0.168652
    assert round(blame(fit, b), 6) == 0.999994
    c = tip(db, G, "R-hand-cd", "tip C")
    d = tip(db, G, "R-hand-cd", "tip D")
    attempt(db, G, "hand-cd-1", "R-hand-cd", [c, d], [c], False, "health_failure")
    attempt(db, G, "hand-cd-2", "R-hand-cd", [c, d], [d], True)
    fit = fit_skill(db, G, AS_OF)
    assert (round(blame(fit, c), 6), round(blame(fit, d), 6)) == (0.983319, 0.036189)


def test_effects_by_hand(db: psycopg.Connection) -> None:
    """Eight attempts at one rule: tip A ignored in four (3 pass, 1 fail) and followed in four (1 pass,
    3 fail). With the penalty all but off (lambda 1e-6) the fit is the two-group logistic regression:
    intercept logit(3/4) = ln 3, effect logit(1/4) - logit(3/4) = -2 ln 3 = -2.197, variance
    1/(4 * 3/16) + 1/(4 * 3/16) = 8/3, so the std error is 1.633 and the bounds -2.197 -/+ 1.645 *
    1.633: -4.883 and 0.489."""
    set_parameter(db, "effects.ridge_lambda", 1e-6)
    a = tip(db, B, "CVE-1", "tip A")
    for g in range(1, 9):
        attempt(db, B, f"r{g}", "CVE-1", [a], [a] if g <= 4 else [], g in (1, 5, 6, 7))
    fit = fit_skill(db, B, AS_OF)
    r = row(fit, a)
    assert (round(r["effect"], 3), round(r["std_error"], 3)) == (-2.197, 1.633)
    assert (round(r["upper"], 3), round(r["lower"], 3)) == (0.489, -4.883)
    i = int(np.searchsorted(fit.tip_id, a))
    assert (fit.attempts[i], fit.followed_attempts[i], fit.co_followed_tips[i], fit.component_tips[i],
            fit.method[i]) == (8, 4.0, 1, 1, "exact")
    assert fit.effect_parameters["effects_converged"] and fit.effect_parameters["iterations"] < 25


def test_effects_explain_away(db: psycopg.Connection) -> None:
    """Rule b: whenever M was followed, H was too: H and M followed fail (x6), H alone passes (x6),
    neither fails (x6). Rule c fails for everyone whatever is followed (X and Y in every pattern).
    Rule d: W1 and W2 always followed together (fail x6) or ignored together (pass x6)."""
    h, m = tip(db, G, "b", "helpful H"), tip(db, G, "b", "misleading M")
    for g in range(1, 19):
        attempt(db, G, f"b-{g}", "b", [h, m], [h, m] if g <= 6 else [h] if g <= 12 else [], 7 <= g <= 12)
    x, y = tip(db, G, "c", "X"), tip(db, G, "c", "Y")
    for g in range(1, 9):
        attempt(db, G, f"c-{g}", "c", [x, y], [[x, y], [x], [y], []][g % 4], False)
    w1, w2 = tip(db, G, "d", "W1"), tip(db, G, "d", "W2")
    for g in range(1, 13):
        attempt(db, G, f"d-{g}", "d", [w1, w2], [w1, w2] if g <= 6 else [], g > 6)
    fit = fit_skill(db, G, AS_OF)
    assert row(fit, h)["effect"] > 0 and row(fit, m)["upper"] < 0 and row(fit, m)["effect"] < row(fit, h)["effect"]
    assert (row(fit, h)["component"], row(fit, h)["method"]) == (2, "exact") == (row(fit, m)["component"], row(fit, m)["method"])
    for t in (x, y):
        assert abs(row(fit, t)["effect"]) < 0.01 and row(fit, t)["upper"] > 0, "a rule that fails for everyone blames no tip"
    assert row(fit, w1)["effect"] == row(fit, w2)["effect"] and row(fit, w1)["upper"] < 0
    assert fit.co_followed_tips[np.searchsorted(fit.tip_id, w2)] == 2


def test_a_verdict_read_at_its_base_rate() -> None:
    """A verdict right 9 times in 10 means 0.9 only when scripts follow half the tips they see; where
    they follow 3 in 10, a "followed" verdict means 0.27 / (0.27 + 0.07)."""
    assert round(float(follow_chance(np.array(True), 0.9, 0.3)), 6) == round(0.27 / 0.34, 6)
    assert round(float(follow_chance(np.array(True), 0.9, 0.5)), 6) == 0.9


def test_explaining_away(db: psycopg.Connection) -> None:
    t = explaining_away_world(db, G, B)
    cve = fit_skill(db, B, AS_OF)
    stig = fit_skill(db, G, AS_OF)
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
    t = explaining_away_world(db, G, B)
    set_parameter(db, "blame.max_work", 1700)
    fit = fit_skill(db, B, AS_OF)
    assert (fit.blame_summary["blame_block_tips"], fit.blame_summary["blame_method"]) == (1, "partitioned")
    assert blame(fit, t["m"]) > 0.5
    set_parameter(db, "blame.max_work", 1000)
    fit = fit_skill(db, B, AS_OF)
    assert fit.blame_summary["blame_method"] == "mean_field" and fit.blame_summary["blame_converged"]
    assert blame(fit, t["m"]) > 0.9 and blame(fit, t["h"]) < 0.05
    assert all(blame(fit, t[k]) < 0.5 for k in "cde")
    assert fit.blame_summary["blame_moving_tips"] == 0 and fit.blame_summary["blame_last_tip_change"] < 1e-4
    set_parameter(db, "blame.max_sweeps", 1)
    fit = fit_skill(db, B, AS_OF)
    assert not fit.blame_summary["blame_converged"] and fit.blame_summary["blame_sweeps"] == 1
    assert fit.blame_summary["blame_moving_tips"] > 0 and fit.blame_summary["blame_last_tip_change"] > 1e-3


def test_cosine_beside_the_judge(db: psycopg.Connection) -> None:
    """Rule R-bg's 40 attempts teach the fit how far this skill's cosine tells followed (near 0.8)
    from ignored (near 0.4). Rule R-k: N judged followed in all 12 attempts; K judged ignored in
    all, but its cosine says the failing (even) attempts took it (0.9) and the passing ones did not."""
    db.execute("SELECT ctxgraph.add_skill('web', 'binary')")  # the cosine's own skill
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
    x, y, z = (tip(db, G, "R-sure", f"tip {n}") for n in "XYZ")
    for g in range(1, 301):
        followed = ([x] if g % 2 == 0 else []) + ([y] if g % 3 == 0 else []) + ([z] if g % 5 == 0 else [])
        attempt(db, G, f"sure-{g}", "R-sure", [x, y, z], followed, g % 2 == 1, "health_failure")
    fit = fit_skill(db, G, AS_OF)
    assert blame(fit, x) == 1 and blame(fit, y) < 0.01 and blame(fit, z) < 0.01


@pytest.mark.parametrize(("name", "value"), [("blame.judge_reliability", 0.3), ("blame.cosine_with_judge", 0.5),
                                             ("effects.ridge_lambda", 0), ("effects.max_iterations", 0)])
def test_parameters_out_of_range_are_refused(db: psycopg.Connection, name: str, value: float) -> None:
    t = tip(db, G, "R-p", "tip P")
    attempt(db, G, "p-1", "R-p", [t], [t], True)
    set_parameter(db, name, value)
    with pytest.raises(ValueError, match="ctxgraph: (blame|effects)"):
        fit_skill(db, G, AS_OF)


def test_blockwise_equals_exact(db: psycopg.Connection) -> None:
    """A group over effects.max_component_tips gets the same effects, and std errors of its rule
    blocks with the others held fixed: positive and at most the exact ones."""
    tips = linked_world(db, G)
    exact = fit_skill(db, G, AS_OF)
    assert all(row(exact, t)["method"] == "exact" and row(exact, t)["component"] == 12 for t in tips)
    set_parameter(db, "effects.max_component_tips", 1)
    blockwise = fit_skill(db, G, AS_OF)
    z = blockwise.effect_parameters["effects.bound_z"]
    for t in tips:
        e, b = row(exact, t), row(blockwise, t)
        assert b["method"] == "blockwise" and b["component"] == 12
        assert abs(b["effect"] - e["effect"]) < 1e-6
        assert 0 < b["std_error"] <= e["std_error"] + 1e-9
        assert abs(b["upper"] - (b["effect"] + z * b["std_error"])) < 1e-12
    assert blockwise.effect_parameters["effects_converged"]


PARITY = json.loads((ROOT / "tests" / "data" / "fit_parity.json").read_text())


@pytest.mark.parametrize("case", PARITY["cases"], ids=[case["name"] for case in PARITY["cases"]])
def test_same_numbers_as_the_released_fit(db: psycopg.Connection, case: dict) -> None:
    """The numpy fit gives what the PL/pgSQL fit of @v0.6.0 gave on the same worlds (recorded by
    scripts/record-fit-parity.py): effects within 1e-6, std errors within 1e-5, misleading
    probabilities within 1e-6, exact, partitioned and in the mean field."""
    linked_world(db, G)
    explaining_away_world(db, G, B)
    for name, value in case["parameters"].items():
        set_parameter(db, name, value)
    for role, expected in case["skills"].items():
        skill = {"graded": G, "binary": B}[role]
        fit = fit_skill(db, skill, AS_OF)
        bodies = dict(db.execute("SELECT id, body FROM ctxgraph.tips WHERE skill = %s", (skill,)).fetchall())
        assert fit.blame_summary["blame_method"] == expected["blame_method"]
        seen = 0
        for tip_id, body in bodies.items():
            if body not in expected["tips"]:
                continue
            want = expected["tips"][body]
            i = int(np.searchsorted(fit.tip_id, tip_id))
            assert fit.method[i] == want["method"], body
            assert abs(fit.effect[i] - want["effect"]) < 1e-6, body
            assert abs(fit.std_error[i] - want["std_error"]) < 1e-5, body
            assert abs(fit.misleading_probability[i] - want["misleading_probability"]) < 1e-6, body
            seen += 1
        assert seen == len(expected["tips"])


def test_write_fit(db: psycopg.Connection) -> None:
    """write_fit replaces the skill's rows whole and records the fit, which fit_state then calls current."""
    t = explaining_away_world(db, G, B)
    fit = fit_skill(db, B, AS_OF)
    assert write_fit(db, fit) == 5
    stored = dict(db.execute("SELECT tip_id, misleading_probability FROM ctxgraph.tip_effects WHERE skill = %s",
                             (B,)).fetchall())
    assert set(stored) == set(int(x) for x in fit.tip_id)
    assert abs(stored[t["m"]] - blame(fit, t["m"])) < 1e-15
    parameters = scalar(db, "SELECT parameters FROM ctxgraph.tip_effects WHERE tip_id = %s", (t["m"],))
    assert parameters["blame_method"] == "exact" and parameters["effects.ridge_lambda"] == 0.5
    assert scalar(db, "SELECT evidence_version FROM ctxgraph.tip_effect_fits WHERE skill = %s", (B,)) == fit.evidence_version
    state = fit_state(db, B, AS_OF)
    assert state.current and state.tips_changed == 0 and state.refit is None
    run = ensure_fit(db, B, AS_OF)
    assert not run.fitted, "a current fit is not refitted"
    # One corrected outcome changes the evidence of the attempt's tips: stale by those, refitted.
    attempt_id = scalar(db, "SELECT attempt_id FROM ctxgraph.tip_retrievals WHERE skill = %s AND tip_id = %s LIMIT 1",
                        (B, t["m"]))
    db.execute("UPDATE ctxgraph.attempts SET passed = NOT passed, failure_mode = CASE WHEN passed THEN 'clean_failure' END"
               " WHERE skill = %s AND id = %s", (B, attempt_id))
    state = fit_state(db, B, AS_OF)
    assert not state.current and state.tips_changed == 2
    assert state.refit == f"ctxgraph fit --skill {B} --as-of {AS_OF:%Y-%m-%dT%H:%M:%S}.000000Z"
    assert ensure_fit(db, B, AS_OF).fitted and fit_state(db, B, AS_OF).current


def test_write_refuses_an_incomplete_fit(db: psycopg.Connection) -> None:
    explaining_away_world(db, G, B)
    fit = fit_skill(db, B, AS_OF)
    write_fit(db, fit)
    before = db.execute("SELECT tip_id, misleading_probability FROM ctxgraph.tip_effects WHERE skill = %s ORDER BY 1",
                        (B,)).fetchall()
    db.execute("SELECT ctxgraph.tip_fit_staging()")
    db.execute("INSERT INTO pg_temp.ctxgraph_tip_fit (tip_id, attempts, followed_attempts, method, evidence_version)"
               " VALUES (%s, 0, 0, 'no_evidence', 0)", (int(fit.tip_id[0]),))
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="has no staged row"):
        with db.transaction():
            db.execute("SELECT ctxgraph.write_tip_fit(%s, %s, 1, '{}', '{}')", (B, AS_OF))
    after = db.execute("SELECT tip_id, misleading_probability FROM ctxgraph.tip_effects WHERE skill = %s ORDER BY 1",
                       (B,)).fetchall()
    assert after == before, "nothing was written"


def test_the_evidence_stream_is_parsed_the_same_in_any_batches(db: psycopg.Connection, monkeypatch) -> None:
    """The binary COPY is parsed while it arrives, whole rows at a time: batches that cut rows in
    two give the same evidence as one batch for the whole stream."""
    from ctxgraph.fit import store as ev

    linked_world(db, G)
    whole = ev.read_evidence(db, G, AS_OF)
    monkeypatch.setattr(ev._RowStream, "BATCH", 101)  # not a multiple of a row's width
    cut = ev.read_evidence(db, G, AS_OF)
    assert whole.rows == cut.rows == 480
    for name in ("tip_id", "attempt_key", "rule", "run", "follow_weight", "credit", "source", "followed",
                 "follow_probability", "cosine"):
        assert np.array_equal(getattr(whole, name), getattr(cut, name), equal_nan=True), name
