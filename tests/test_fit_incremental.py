"""An incremental fit (only the tips whose evidence changed, from the stored fit) against a full fit
of the same evidence. No database: the evidence is drawn here and the stored fit built from a fit
of the log before its last run, as ctxgraph.fit_previous would hand it over.

The stated tolerance (docs/model.md, "Incremental refits"): every effect within 1e-6 (each group's
problem is convex and a group with nothing new keeps its stored optimum exactly), every misleading
probability within 0.005 (both are fixed points of the same sweep, reached to blame's 1e-4
stopping rule from different starts).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import numpy as np
import pytest

from ctxgraph.fit import SkillFit, fit_evidence
from ctxgraph.fit.evidence import SOURCE_CODES, Evidence, PreviousFit
from ctxgraph.fit.store import fit_parameters

EFFECT_TOLERANCE = 1e-6
BLAME_TOLERANCE = 0.005

PARAMETERS = {"blame.judge_reliability": 0.9, "blame.embedding_reliability": 0.7, "blame.misleading_failure": 1.0,
              "blame.unexplained_harm": 0.001, "blame.prior_misleading": 0.2, "blame.max_block_tips": 10,
              "blame.base_rate_points": 5, "blame.harm_share_points": 3, "blame.cosine_with_judge": 1,
              "blame.max_sweeps": 100, "blame.max_work": 1e7, "blame.fit_judge_reliability": 1,
              "blame.fit_misleading_failure": 1, "effects.ridge_lambda": 1.0, "effects.bound_z": 1.96,
              "effects.max_component_tips": 200, "effects.max_iterations": 50}


def world(seed: int, runs: int, *, last_run_rules: int | None = None, cross: float = 0.0,
          parameters: dict[str, float] | None = None, rules: int = 30, tips: int = 6, shown: int = 4) -> Evidence:
    """Rules with their own tips, a fifth misleading (a followed one fails the attempt); with
    ``cross`` an attempt's last tip is another rule's that often. The last run tries only the first
    ``last_run_rules`` rules. The same seed draws the same first runs whatever ``runs`` is."""
    rng = np.random.default_rng(seed)
    n_tips = rules * tips
    misleading = rng.permutation(n_tips) < n_tips // 5
    base = rng.uniform(0.3, 0.9, rules)
    rows: dict[str, list] = {k: [] for k in ("tip", "attempt", "rule", "run", "followed", "cosine", "credit")}
    attempt = 0
    for run in range(runs):
        for rule in range(rules):
            if run == runs - 1 and last_run_rules is not None and rule >= last_run_rules:
                continue
            attempt += 1
            show = rule * tips + rng.choice(tips, shown, replace=False)
            if rng.random() < cross:
                stranger = int(rng.integers(n_tips))
                if stranger not in show:
                    show[-1] = stranger
            follows = rng.random(shown) < 0.5
            sunk = np.any(misleading[show] & follows)
            passed = (not sunk) and rng.random() < base[rule]
            verdict = np.where(rng.random(shown) < 0.9, follows, ~follows)
            cosine = np.clip(rng.normal(np.where(follows, 0.8, 0.4), 0.15), -1, 1)
            for k in range(shown):
                rows["tip"].append(show[k] + 1)
                rows["attempt"].append(attempt)
                rows["rule"].append(rule)
                rows["run"].append(run)
                rows["followed"].append(int(verdict[k]))
                rows["cosine"].append(cosine[k])
                rows["credit"].append(1.0 if passed else 0.0)
    n = len(rows["tip"])
    return Evidence(
        skill="sim", as_of=datetime(2026, 12, 1, tzinfo=timezone.utc) + timedelta(days=runs),
        rules=[f"r{i:03d}" for i in range(rules)], runs=[f"run{i}" for i in range(runs)],
        tip_id=np.array(rows["tip"], dtype=np.int64), attempt_key=np.array(rows["attempt"], dtype=np.int64),
        rule=np.array(rows["rule"], dtype=np.int64), run=np.array(rows["run"], dtype=np.int64),
        follow_weight=np.array(rows["followed"], dtype=float), credit=np.array(rows["credit"]),
        source=np.full(n, SOURCE_CODES["judge"], dtype=np.int8), followed=np.array(rows["followed"], dtype=np.int8),
        follow_probability=np.full(n, np.nan), cosine=np.array(rows["cosine"]),
        harmful_attempts=np.zeros(0, dtype=np.int64), skill_tips=np.arange(1, n_tips + 1, dtype=np.int64),
        evidence_version=Decimal(0), parameters={**PARAMETERS, **(parameters or {})},
        tip_versions=np.zeros(n_tips, dtype=np.int64))


def stored(fit: SkillFit, before: Evidence, after: Evidence) -> PreviousFit:
    """The stored fit of ``before``, the tips whose rows differ in ``after`` named as changed."""
    def rows_by_tip(evidence: Evidence) -> dict[int, list]:
        out: dict[int, list] = {}
        for i in range(evidence.rows):
            out.setdefault(int(evidence.tip_id[i]), []).append(
                (int(evidence.attempt_key[i]), float(evidence.credit[i]), int(evidence.followed[i])))
        return out

    old, new = rows_by_tip(before), rows_by_tip(after)
    changed = sorted(t for t in old.keys() | new.keys() if old.get(t) != new.get(t))
    return PreviousFit(as_of=before.as_of, parameters=dict(before.parameters),
                       summary=json.loads(json.dumps(fit_parameters(fit))), tip_id=fit.tip_id, effect=fit.effect,
                       std_error=fit.std_error, method=fit.method, misleading_probability=fit.misleading_probability,
                       changed=np.array(changed, dtype=np.int64))


CASES = {
    "exact": {},
    "exact, cross-retrieved tips": {"cross": 0.3},
    "mean field": {"parameters": {"blame.max_work": 10}},
}


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("last_run_rules", [3, None], ids=["a run of three rules", "a run of every rule"])
@pytest.mark.parametrize("case", list(CASES))
def test_incremental_agrees_with_full(seed: int, last_run_rules: int | None, case: str) -> None:
    before = world(seed, 6, **CASES[case])
    after = world(seed, 7, last_run_rules=last_run_rules, **CASES[case])
    previous = stored(fit_evidence(before), before, after)
    full = fit_evidence(after)
    after.previous = previous
    incremental = fit_evidence(after)
    assert incremental.effect_parameters["fit"] == "incremental" and full.effect_parameters["fit"] == "full"
    assert incremental.blame_summary["refitted_tips"] <= previous.changed.size
    assert full.blame_summary["blame_method"] == incremental.blame_summary["blame_method"]
    assert incremental.blame_summary["blame_converged"] and full.blame_summary["blame_converged"]
    assert np.array_equal(np.isnan(incremental.effect), np.isnan(full.effect))
    assert np.nanmax(np.abs(incremental.effect - full.effect)) <= EFFECT_TOLERANCE
    assert np.nanmax(np.abs(incremental.std_error - full.std_error)) <= EFFECT_TOLERANCE
    assert np.nanmax(np.abs(incremental.misleading_probability - full.misleading_probability)) <= BLAME_TOLERANCE


def test_groups_with_nothing_new_keep_their_stored_effects() -> None:
    # No cross-retrieval: each rule is a group of its own, and the last run touches three rules.
    before = world(3, 6)
    after = world(3, 7, last_run_rules=3)
    first = fit_evidence(before)
    after.previous = stored(first, before, after)
    incremental = fit_evidence(after)
    untouched = np.isin(incremental.tip_id, np.arange(3 * 6 + 1, 30 * 6 + 1))
    assert np.array_equal(incremental.effect[untouched], first.effect[untouched])
    assert np.array_equal(incremental.std_error[untouched], first.std_error[untouched])
    assert incremental.blame_summary["refitted_tips"] == after.previous.changed.size < 3 * 6 + 1


def test_a_stored_fit_of_other_parameters_or_a_later_instant_is_not_started_from() -> None:
    before = world(1, 6)
    after = world(1, 7, last_run_rules=3)
    previous = stored(fit_evidence(before), before, after)
    after.previous = PreviousFit(**{**previous.__dict__, "parameters": {**previous.parameters,
                                                                       "effects.ridge_lambda": 2.0}})
    fit = fit_evidence(after)
    assert fit.effect_parameters["fit"] == "full"
    assert fit.effect_parameters["fit_reason"] == "the parameters changed since the stored fit"
    after.previous = PreviousFit(**{**previous.__dict__, "as_of": after.as_of + timedelta(days=1)})
    fit = fit_evidence(after)
    assert fit.effect_parameters["fit"] == "full"
    assert fit.effect_parameters["fit_reason"] == "the stored fit is as of a later instant"
