"""The attribution fit: per-tip effects and blame, in numpy, written to ``ctxgraph.tip_effects``.

:func:`fit_skill` reads a skill's evidence in one snapshot (:mod:`ctxgraph.fit.evidence`), fits the
effects (:mod:`ctxgraph.fit.effects`) and the blame (:mod:`ctxgraph.fit.blame`), and returns one
row per tip of the skill; :func:`ctxgraph.fit.store.write_fit` writes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import numpy as np
import psycopg

from ctxgraph.fit.blame import BlameParameters, fit_blame
from ctxgraph.fit.effects import fit_effects
from ctxgraph.fit.evidence import Evidence, read_evidence

__all__ = ["SkillFit", "fit_evidence", "fit_skill"]


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


def fit_evidence(evidence: Evidence) -> SkillFit:
    """Fit the effects and the blame of a skill's evidence."""
    values = evidence.parameters
    ridge = _param(values, "effects.ridge_lambda")
    z = _param(values, "effects.bound_z")
    max_columns = int(_param(values, "effects.max_component_tips"))
    max_iterations = int(_param(values, "effects.max_iterations"))
    max_sweeps = int(_param(values, "effects.max_sweeps"))
    if ridge <= 0 or max_iterations < 1 or max_sweeps < 1:
        raise ValueError("ctxgraph: effects.ridge_lambda must be positive, effects.max_iterations and "
                         "effects.max_sweeps at least 1")
    blame_params = BlameParameters.from_parameters(values)
    effects = fit_effects(evidence, ridge_lambda=ridge, max_component_tips=max_columns,
                          max_iterations=max_iterations, max_sweeps=max_sweeps)
    blame = fit_blame(evidence, blame_params)
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
                           "effects.max_sweeps": max_sweeps, "iterations": effects.iterations,
                           "effects_converged": effects.converged},
        blame_summary=blame.summary,
        rows_read=evidence.rows,
    )


def fit_skill(conn: psycopg.Connection, skill: str, as_of: datetime) -> SkillFit:
    """Read ``skill``'s evidence up to ``as_of`` and fit it (nothing is written)."""
    return fit_evidence(read_evidence(conn, skill, as_of))
