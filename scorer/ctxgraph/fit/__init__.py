"""The attribution fit: per-tip effects and blame, in numpy, written to ``ctxgraph.tip_effects``.

:func:`fit_skill` reads a skill's evidence in one snapshot (:mod:`ctxgraph.fit.store`, every statement of the fit), fits the
effects (:mod:`ctxgraph.fit.effects`) and the blame (:mod:`ctxgraph.fit.blame`), and returns one
row per tip of the skill; :func:`ctxgraph.fit.store.write_fit` writes them, and :func:`ensure_fit` does
all three unless :func:`fit_state` says the stored fit is current.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import numpy as np
import psycopg

from ctxgraph.fit.blame import BlameParameters, fit_blame
from ctxgraph.fit.effects import fit_effects
from ctxgraph.fit.evidence import Evidence, PreviousFit
from ctxgraph.fit.store import read_evidence, read_fit_state, write_fit

__all__ = ["FitRun", "FitState", "SkillFit", "ensure_fit", "fit_evidence", "fit_skill", "fit_state"]


@dataclass
class SkillFit:
    """One fit of a skill: a row per tip, and what stamps it."""

    skill: str
    as_of: datetime
    evidence_version: Decimal
    parameters: dict[str, float]
    tip_versions: dict[int, int]
    tip_id: np.ndarray
    effect: np.ndarray  # NaN: no evidence
    std_error: np.ndarray
    lower_bound: np.ndarray
    upper_bound: np.ndarray
    attempts: np.ndarray
    followed_attempts: np.ndarray
    co_followed_tips: np.ndarray  # 0: no evidence (NULL)
    component_tips: np.ndarray
    method: np.ndarray
    misleading_probability: np.ndarray  # NaN: none
    effect_parameters: dict[str, Any]
    blame_summary: dict[str, Any]
    rows_read: int

    def misleading(self, tip: int) -> float:
        return float(self.misleading_probability[np.searchsorted(self.tip_id, tip)])


def _param(values: dict[str, float], name: str) -> float:
    if name not in values:
        raise ValueError(f"ctxgraph: parameter {name} is missing from ctxgraph.parameters")
    return values[name]


def _usable(previous: PreviousFit | None, evidence: Evidence) -> tuple[PreviousFit | None, str]:
    """The stored fit, when an incremental fit may start from it, and why (not)."""
    if previous is None:
        return None, "no stored fit"
    if previous.parameters != evidence.parameters:
        return None, "the parameters changed since the stored fit"
    if previous.as_of > evidence.as_of:
        return None, "the stored fit is as of a later instant"
    return previous, f"{previous.changed.size} tips' evidence changed since the stored fit"


def fit_evidence(evidence: Evidence) -> SkillFit:
    """Fit the effects and the blame of a skill's evidence.

    Incremental when ``evidence.previous`` holds a stored fit of the same parameters as of an
    instant no later (:func:`ctxgraph.fit.store.read_evidence` with ``previous``): the effects of
    the groups where a tip's evidence changed, the blame of those tips (every block holding one),
    each from the stored figures; otherwise in full.
    """
    values = evidence.parameters
    previous, reason = _usable(evidence.previous, evidence)
    ridge = _param(values, "effects.ridge_lambda")
    z = _param(values, "effects.bound_z")
    max_columns = int(_param(values, "effects.max_component_tips"))
    max_iterations = int(_param(values, "effects.max_iterations"))
    if ridge <= 0 or max_iterations < 1:
        raise ValueError("ctxgraph: effects.ridge_lambda must be positive and effects.max_iterations at least 1")
    blame_params = BlameParameters.from_parameters(values)
    effects = fit_effects(evidence, ridge_lambda=ridge, max_component_tips=max_columns,
                          max_iterations=max_iterations, previous=previous)
    blame = fit_blame(evidence, blame_params, previous)
    tips = evidence.skill_tips
    n = tips.size
    effect = np.full(n, np.nan)
    variance = np.full(n, np.nan)
    attempts = np.zeros(n, dtype=np.int64)
    followed = np.zeros(n)
    co = np.zeros(n, dtype=np.int64)
    component = np.zeros(n, dtype=np.int64)
    method = np.full(n, "no_evidence", dtype=object)
    at = np.searchsorted(tips, effects.tips)
    effect[at] = effects.effect
    variance[at] = effects.variance
    attempts[at] = effects.attempts
    followed[at] = effects.followed_attempts
    co[at] = effects.co_followed
    component[at] = effects.component_tips
    method[at] = effects.method
    misleading = np.full(n, np.nan)
    misleading[np.searchsorted(tips, blame.tips)] = blame.probability
    std_error = np.sqrt(variance)
    return SkillFit(
        skill=evidence.skill,
        as_of=evidence.as_of,
        evidence_version=evidence.evidence_version,
        parameters=values,
        tip_versions=evidence.tip_versions,
        tip_id=tips,
        effect=effect,
        std_error=std_error,
        lower_bound=effect - z * std_error,
        upper_bound=effect + z * std_error,
        attempts=attempts,
        followed_attempts=followed,
        co_followed_tips=co,
        component_tips=component,
        method=method,
        misleading_probability=misleading,
        effect_parameters={"effects.ridge_lambda": ridge, "effects.bound_z": z,
                           "effects.max_component_tips": max_columns, "effects.max_iterations": max_iterations,
                           "iterations": effects.iterations,
                           "effects_converged": effects.converged,
                           "fit": "incremental" if previous is not None else "full", "fit_reason": reason},
        blame_summary=blame.summary,
        rows_read=evidence.rows,
    )


def fit_skill(conn: psycopg.Connection, skill: str, as_of: datetime) -> SkillFit:
    """Read ``skill``'s evidence up to ``as_of`` and fit it (nothing is written)."""
    return fit_evidence(read_evidence(conn, skill, as_of))


@dataclass(frozen=True)
class FitState:
    """``ctxgraph.fit_state``: whether the stored fit is that of the evidence up to ``as_of``."""

    as_of: datetime
    fitted_at: datetime | None
    fit_as_of: datetime | None
    current: bool
    parameters_changed: bool
    tips_changed: int
    attempts_after: int
    refit: str | None

    def describe(self) -> str:
        if self.fitted_at is None:
            return "never fitted"
        if self.current:
            return f"current, fitted {self.fitted_at:%Y-%m-%d %H:%M:%S%z} as of {self.fit_as_of:%Y-%m-%d %H:%M:%S%z}"
        changed = ", parameters changed" if self.parameters_changed else ""
        return (f"stale: {self.tips_changed} tips' evidence changed, {self.attempts_after} scored attempts after its "
                f"as of {self.fit_as_of:%Y-%m-%d %H:%M:%S%z}{changed}")


def fit_state(conn: psycopg.Connection, skill: str, as_of: datetime | None = None) -> FitState:
    """Read ``ctxgraph.fit_state(skill, as_of)`` (as_of: the database's now() when None)."""
    as_of, fitted_at, fit_as_of, current, changed, tips, attempts, refit = read_fit_state(conn, skill, as_of)
    return FitState(as_of, fitted_at, fit_as_of, bool(current), bool(changed), int(tips), int(attempts), refit)


@dataclass
class FitRun:
    """What :func:`ensure_fit` did."""

    state: FitState  # before
    fitted: bool
    tips_with_evidence: int | None
    seconds: float
    fit: SkillFit | None


def ensure_fit(conn: psycopg.Connection, skill: str, as_of: datetime | None = None, *, full: bool = False,
               progress: Callable[[str], None] | None = None) -> FitRun:
    """Make ``ctxgraph.tip_effects`` the fit of ``skill``'s evidence up to ``as_of`` (now when None).

    Fits and writes only when the stored fit is not already that one (``ctxgraph.fit_state``),
    incrementally from it where it can (:func:`fit_evidence`); with ``full`` always, and from
    nothing. The connection must not be inside a transaction.
    """
    began = time.perf_counter()
    state = fit_state(conn, skill, as_of)
    if state.current and not full:
        return FitRun(state, False, None, time.perf_counter() - began, None)
    say = progress or (lambda line: None)
    evidence = read_evidence(conn, skill, state.as_of, previous=not full)
    evidence.drop_row_keys()
    say(f"fit {skill}: read {evidence.rows:,} scored retrievals in {time.perf_counter() - began:.1f} s")
    fit = fit_evidence(evidence)
    if full:
        fit.effect_parameters["fit_reason"] = "a full fit was asked for"
    blame = fit.blame_summary
    kind = fit.effect_parameters["fit"]
    refitted = f", {blame['refitted_tips']:,} tips refitted" if "refitted_tips" in blame else ""
    say(f"fit {skill}: {kind} ({fit.effect_parameters['fit_reason']}{refitted}): effects in "
        f"{fit.effect_parameters['iterations']} Newton iterations, blame "
        f"{blame.get('blame_method')} in {blame.get('blame_sweeps')} sweeps"
        f"{'' if blame.get('blame_converged', True) else ' (not settled)'} ({time.perf_counter() - began:.1f} s)")
    written = write_fit(conn, fit)
    return FitRun(state, True, written, time.perf_counter() - began, fit)
