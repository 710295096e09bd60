"""Writing a fit: COPY its rows into the session's staging table, then ``ctxgraph.write_tip_fit``.

One transaction: the skill's rows of ``ctxgraph.tip_effects`` are replaced whole or not at all, and
``ctxgraph.tip_effect_fits`` records the evidence fingerprint and the parameters the fit read.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import psycopg

from ctxgraph.fit import SkillFit

__all__ = ["fit_parameters", "write_fit"]

_COLUMNS = ("tip_id", "effect", "std_error", "lower_bound", "upper_bound", "attempts", "followed_attempts",
            "co_followed_tips", "component_tips", "method", "misleading_probability", "evidence_version")


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(float(value)) else None
    return value


def fit_parameters(fit: SkillFit) -> dict[str, Any]:
    """What every row of the fit records in ``tip_effects.parameters``: the effects' parameters and
    iterations, and the blame's parameters and summary."""
    return _json_safe({**fit.effect_parameters, **fit.blame_summary})


def _nullable(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def write_fit(conn: psycopg.Connection, fit: SkillFit) -> int:
    """Write ``fit`` in one transaction (the connection must not be inside one); returns the tips with evidence."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT ctxgraph.tip_fit_staging()")
        table = cur.fetchone()[0]
        columns = ", ".join(_COLUMNS)
        with cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for i in range(fit.tip_id.size):
                evidence = fit.method[i] != "no_evidence"
                copy.write_row((
                    int(fit.tip_id[i]),
                    _nullable(fit.effect[i]),
                    _nullable(fit.std_error[i]),
                    _nullable(fit.lower_bound[i]),
                    _nullable(fit.upper_bound[i]),
                    int(fit.attempts[i]),
                    float(fit.followed_attempts[i]),
                    int(fit.co_followed_tips[i]) if evidence else None,
                    int(fit.component_tips[i]) if evidence else None,
                    str(fit.method[i]),
                    _nullable(fit.misleading_probability[i]),
                    int(fit.tip_versions[i]),
                ))
        cur.execute(
            "SELECT ctxgraph.write_tip_fit(%s, %s, %s, %s::jsonb, %s::jsonb)",
            (fit.skill, fit.as_of, fit.evidence_version, json.dumps(fit.parameters, sort_keys=True),
             json.dumps(fit_parameters(fit), sort_keys=True)),
        )
        return int(cur.fetchone()[0])
