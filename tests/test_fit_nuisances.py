"""The blame fit's nuisance quantities fitted from the data: the judge's reliability and the chance
that following a misleading tip fails the attempt (blame.fit_judge_reliability,
blame.fit_misleading_failure). No database: the evidence is drawn here, from a small world whose
truth the test sets, and handed to the fit as ctxgraph.fit_evidence would.
"""

from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal

import numpy as np
import pytest

from ctxgraph.fit.blame import BlameParameters, fit_blame
from ctxgraph.fit.evidence import SOURCE_CODES, Evidence

PARAMETERS = {"blame.judge_reliability": 0.9, "blame.embedding_reliability": 0.7, "blame.misleading_failure": 1.0,
              "blame.unexplained_harm": 0.001, "blame.prior_misleading": 0.2, "blame.max_block_tips": 10,
              "blame.base_rate_points": 5, "blame.harm_share_points": 3, "blame.cosine_with_judge": 1,
              "blame.max_sweeps": 100, "blame.max_work": 1e7, "blame.fit_judge_reliability": 1,
              "blame.fit_misleading_failure": 1}


def world(seed: int, *, judge: float, failure: float, separation: float = 0.4, rules: int = 30, tips: int = 6,
          runs: int = 6, shown: int = 4, obedience: float = 0.5) -> tuple[Evidence, set[int]]:
    """Rules with tips of which a fifth are misleading: a followed misleading tip fails the attempt with
    chance `failure` (else it passes with the rule's own rate); the judge is right with chance `judge`;
    the cosine is normal around 0.6 +/- separation / 2 (sd 0.15). Every attempt is a first try."""
    rng = np.random.default_rng(seed)
    n_tips = rules * tips
    misleading = rng.permutation(n_tips) < n_tips // 5
    base = rng.uniform(0.3, 0.9, rules)
    rows: dict[str, list] = {k: [] for k in ("tip", "attempt", "rule", "run", "followed", "judge", "cosine", "credit")}
    harmful = []
    attempt = 0
    for run in range(runs):
        for rule in range(rules):
            attempt += 1
            show = rule * tips + rng.choice(tips, shown, replace=False)
            follows = rng.random(shown) < obedience
            sunk = np.any(misleading[show] & follows & (rng.random(shown) < failure))
            passed = (not sunk) and rng.random() < base[rule]
            if sunk and rng.random() < 0.3:
                harmful.append(attempt)
            verdict = np.where(rng.random(shown) < judge, follows, ~follows)
            cosine = np.clip(rng.normal(np.where(follows, 0.6 + separation / 2, 0.6 - separation / 2), 0.15), -1, 1)
            for k in range(shown):
                rows["tip"].append(show[k] + 1)
                rows["attempt"].append(attempt)
                rows["rule"].append(rule)
                rows["run"].append(run)
                rows["followed"].append(int(verdict[k]))
                rows["judge"].append(int(verdict[k]))
                rows["cosine"].append(cosine[k])
                rows["credit"].append(1.0 if passed else 0.0)
    n = len(rows["tip"])
    evidence = Evidence(
        skill="sim", as_of=datetime(2026, 12, 1, tzinfo=timezone.utc),
        rules=[f"r{i:03d}" for i in range(rules)], runs=[f"run{i}" for i in range(runs)],
        tip_id=np.array(rows["tip"], dtype=np.int64), attempt_key=np.array(rows["attempt"], dtype=np.int64),
        rule=np.array(rows["rule"], dtype=np.int64), run=np.array(rows["run"], dtype=np.int64),
        follow_weight=np.array(rows["judge"], dtype=float), credit=np.array(rows["credit"]),
        source=np.full(n, SOURCE_CODES["judge"], dtype=np.int8), followed=np.array(rows["followed"], dtype=np.int8),
        follow_probability=np.full(n, np.nan), cosine=np.array(rows["cosine"]),
        harmful_attempts=np.array(sorted(harmful), dtype=np.int64),
        skill_tips=np.arange(1, n_tips + 1, dtype=np.int64), evidence_version=Decimal(0), parameters=dict(PARAMETERS),
        tip_versions=np.zeros(n_tips, dtype=np.int64))
    return evidence, {int(t) + 1 for t in np.flatnonzero(misleading)}


def fitted(evidence: Evidence, **changes: float):
    return fit_blame(evidence, BlameParameters.from_parameters({**PARAMETERS, **changes}))


@pytest.mark.parametrize("truth", [0.8, 0.95])
def test_the_judges_reliability_is_read_against_the_cosine(truth: float) -> None:
    evidence, _ = world(1, judge=truth, failure=1.0)
    summary = fitted(evidence).summary
    assert abs(summary["fitted_judge_reliability"] - truth) < 0.03, summary["fitted_judge_reliability"]


def test_a_cosine_that_tells_nothing_leaves_the_configured_reliability() -> None:
    evidence, _ = world(2, judge=0.7, failure=1.0, separation=0.0)
    summary = fitted(evidence).summary
    # Nothing to read it against: no cosine normals at all, so the configured 0.9 stands.
    assert summary["follow_cosine"] is None and "fitted_judge_reliability" not in summary


def test_fitting_off_takes_the_configured_values() -> None:
    evidence, _ = world(3, judge=0.8, failure=0.7)
    summary = fitted(evidence, **{"blame.fit_judge_reliability": 0, "blame.fit_misleading_failure": 0}).summary
    assert "fitted_judge_reliability" not in summary and "fitted_misleading_failure" not in summary


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_the_failure_rate_of_followed_misleading_tips_is_fitted(seed: int) -> None:
    """Where a followed misleading tip always fails the attempt the fit finds 1; where it spares 30%
    of them it finds less than 0.9 (on these small worlds 0.48 to 0.63: the profile is flat, and
    fewer attempts per tip push it low)."""
    always, _ = world(seed, judge=0.9, failure=1.0, rules=40, runs=8)
    assert fitted(always).summary["fitted_misleading_failure"] >= 0.9
    spared, _ = world(seed, judge=0.9, failure=0.7, rules=40, runs=8)
    summary = fitted(spared).summary
    assert 0.4 <= summary["fitted_misleading_failure"] < 0.9, summary["misleading_failure_evidence"]


def test_without_a_judge_the_failure_rate_is_not_fitted() -> None:
    """Only d times the chance that a script followed a tip shows in the outcomes; where that chance
    rests on the cosine's thresholded verdict at a configured reliability, d stays as configured."""
    evidence, _ = world(6, judge=0.9, failure=0.7, rules=40, runs=8)
    evidence.source[:] = SOURCE_CODES["embedding"]
    evidence.followed[:] = (evidence.cosine >= 0.6).astype(np.int8)
    summary = fitted(evidence).summary
    assert summary["fitted_misleading_failure"] is None
    assert summary["misleading_failure_not_fitted"] == "0% of the verdicts are the judge's"
