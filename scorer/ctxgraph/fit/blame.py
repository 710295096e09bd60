"""Blame: which tips fail the attempts that follow them, neighbours explained away.

A latent-class model fitted by EM (docs/model.md, "The blame model"). Each tip is
misleading or not (prior share ``pi``). An attempt of rule r passes only if no misleading tip it
followed sank it and the rule's own chance let it::

    M                  = product over the attempt's misleading tips t of (1 - d f_t)
    P(pass)            = M q_r
    P(health failure)  = (1 - M) h_r + M (1 - q_r) eps
    P(clean failure)   = (1 - M) (1 - h_r) + M (1 - q_r) (1 - eps)

``f_t`` is the chance that the script followed t (:func:`follow_chances`), ``d`` the chance that
following a misleading tip fails the attempt (``blame.misleading_failure``), ``q_r`` the rule's
pass rate and ``h_r`` its share of misleading failures that break the system, both integrated out
over grids (``blame.base_rate_points`` x ``blame.harm_share_points``), ``eps``
``blame.unexplained_harm``. Fitted: ``pi`` and the skill's mixture over the harm-share grid.

The posterior is exact per block (a rule's tips, all their subsets, with the grid), blocks of one
rule cut at ``blame.max_block_tips``, other blocks' tips entering with their current posterior; a
skill whose sweep would exceed ``blame.max_work`` terms is fitted with rules at point estimates
(:func:`_mean_field`). Vectorised: the blocks of one chunk position (the first block of every
rule, then the second, ...) are updated together, as arrays over (block, subset, grid cell);
in the mean field, tips of one place in their rule are. So tips that share attempts (a rule's
own) are updated one after another, as the exact sweep does, and tips of different rules, which
share only a cross-retrieval now and then, together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy import sparse

from ctxgraph.fit.evidence import SOURCE_CODES, Evidence, PreviousFit
from ctxgraph.fit.groups import identical_columns

__all__ = ["BlameFit", "BlameParameters", "fit_blame", "follow_chance"]

TINY = 1e-300
# A sweep that moves no probability, rule figure or skill-wide share by more than this ends the fit.
SETTLED = 1e-4
# Rows per slice where a per-row computation would otherwise hold several temporaries of the log's length.
SLICE = 1 << 20
# The values of d (blame.misleading_failure) whose fits blame.fit_misleading_failure compares.
FAILURE_GRID = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


@dataclass(frozen=True)
class BlameParameters:
    judge_reliability: float = 0.9
    embedding_reliability: float = 0.7
    misleading_failure: float = 1.0
    unexplained_harm: float = 0.001
    prior_misleading: float = 0.2
    max_block_tips: int = 10
    base_rate_points: int = 5
    harm_share_points: int = 3
    cosine_with_judge: float = 1.0
    max_sweeps: int = 100
    max_work: float = 1e7
    fit_judge_reliability: float = 0.0
    fit_misleading_failure: float = 0.0

    @classmethod
    def from_parameters(cls, values: dict[str, float]) -> "BlameParameters":
        def get(name: str, default: float) -> float:
            return float(values.get(f"blame.{name}", default))

        p = cls(
            judge_reliability=get("judge_reliability", 0.9),
            embedding_reliability=get("embedding_reliability", 0.7),
            misleading_failure=get("misleading_failure", 1.0),
            unexplained_harm=get("unexplained_harm", 0.001),
            prior_misleading=get("prior_misleading", 0.2),
            max_block_tips=int(get("max_block_tips", 10)),
            base_rate_points=int(get("base_rate_points", 5)),
            harm_share_points=int(get("harm_share_points", 3)),
            cosine_with_judge=get("cosine_with_judge", 1),
            max_sweeps=int(get("max_sweeps", 100)),
            max_work=get("max_work", 1e7),
            fit_judge_reliability=get("fit_judge_reliability", 0),
            fit_misleading_failure=get("fit_misleading_failure", 0),
        )
        p.check()
        return p

    def check(self) -> None:
        if not (0.5 <= self.judge_reliability <= 1 and 0.5 <= self.embedding_reliability <= 1
                and 0 <= self.misleading_failure <= 1 and 0 < self.prior_misleading < 1
                and 0 <= self.unexplained_harm <= 1 and 1 <= self.max_block_tips <= 16
                and self.cosine_with_judge in (0, 1) and self.base_rate_points >= 1
                and self.harm_share_points >= 1 and self.max_sweeps >= 1 and self.max_work > 0
                and self.fit_judge_reliability in (0, 1) and self.fit_misleading_failure in (0, 1)):
            raise ValueError(
                "ctxgraph: blame.* parameters out of range (reliabilities in [0.5, 1], misleading_failure and "
                "unexplained_harm in [0, 1], prior_misleading in (0, 1), max_block_tips in [1, 16], cosine_with_judge "
                "0 or 1, base_rate_points, harm_share_points and max_sweeps at least 1, max_work positive, "
                "fit_judge_reliability and fit_misleading_failure 0 or 1)"
            )


@dataclass
class BlameFit:
    tips: np.ndarray  # every tip with a scored unit (sorted)
    probability: np.ndarray  # misleading probability, aligned with tips
    summary: dict[str, Any] = field(default_factory=dict)


def follow_chance(followed: np.ndarray, r: np.ndarray, o: np.ndarray, cosine: np.ndarray | None = None,
                  mu1: float | None = None, mu0: float | None = None, spread: float | None = None) -> np.ndarray:
    """P(followed | a verdict right with r either way, base rate o, the cosine under two normals).

    Each normal keeps 2% of its weight for a stray cosine anywhere in [-1, 1]; the cosine is left
    out where it is NaN or no normals are given.
    """
    agree = np.where(followed, r, 1 - r)
    disagree = np.where(followed, 1 - r, r)
    ratio = np.ones(np.shape(followed))
    if cosine is not None and mu1 is not None and spread is not None and spread > 0:
        norm = math.sqrt(2 * math.pi * spread)
        with np.errstate(invalid="ignore"):
            d1 = 0.98 * np.exp(np.maximum(-((cosine - mu1) ** 2) / (2 * spread), -700)) / norm + 0.01
            d0 = 0.98 * np.exp(np.maximum(-((cosine - mu0) ** 2) / (2 * spread), -700)) / norm + 0.01
        ratio = np.where(np.isnan(cosine), 1.0, d1 / d0)
    top = o * agree * ratio
    return top / (top + (1 - o) * disagree)


def _rate_from_share(share, reliability: float):
    """The base rate o behind a share of "followed" verdicts right with reliability r either way:
    share = r o + (1 - r)(1 - o), kept inside [0.02, 0.98]."""
    reliability = np.asarray(reliability, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        inverted = np.clip((share - (1 - reliability)) / (2 * reliability - 1), 0.02, 0.98)
        return np.where(2 * reliability - 1 < 1e-6, share, inverted)


def _verdict_shares(run: np.ndarray, source: np.ndarray, followed: np.ndarray, has_r: np.ndarray, n_runs: int
                    ) -> np.ndarray:
    """Per (run, source), the share of verdicts that say followed, drawn towards the source's share
    over the skill as if 20 more verdicts had it (NaN: no verdict): obedience changes between runs."""
    shares = np.full((n_runs, len(SOURCE_CODES)), np.nan)
    verdict = has_r & (followed >= 0)
    for code in np.unique(source[verdict]):
        rows = verdict & (source == code)
        skill_share = followed[rows].mean()
        count = np.bincount(run[rows], minlength=n_runs)
        hits = np.bincount(run[rows], weights=followed[rows].astype(float), minlength=n_runs)
        share = (hits + 20 * skill_share) / (count + 20)
        shares[count > 0, code] = share[count > 0]
    return shares


def _cosine_normals(evidence: Evidence, judge_shares: np.ndarray, r_judge: float, use: bool, fit_reliability: bool):
    """The cosine's normals for followed and ignored scripts, fitted by EM on the judge's noisy labels.

    With ``fit_reliability`` the judge's reliability is fitted too: judge and cosine are two
    independent looks at whether the script followed, so how often the judge agrees with the
    cosine's reading tells how often it is right (a latent class with one binary and one normal
    indicator). The configured reliability weighs as much as 100 verdicts, so where the cosine
    hardly separates followed from ignored the fit stays near it. Returns (mu1, mu0, spread,
    iterations, reliability) or None.
    """
    rows = (evidence.source == SOURCE_CODES["judge"]) & (evidence.followed >= 0) & ~np.isnan(evidence.cosine)
    if not rows.any():
        return None
    cos = evidence.cosine[rows]
    fol = evidence.followed[rows] == 1
    run = evidence.run[rows]
    # Bins of 0.005 per run and verdict (sums of c and c^2 kept exact): sweeps cost the same at any size.
    key = (run.astype(np.int64) * 2 + fol) * 1024 + np.rint(cos * 200).astype(np.int64) + 512
    _, b_index = np.unique(key, return_inverse=True)
    nb = b_index.max() + 1
    n = np.bincount(b_index, minlength=nb).astype(float)
    sc = np.bincount(b_index, weights=cos, minlength=nb)
    scc = np.bincount(b_index, weights=cos * cos, minlength=nb)
    b_fol = np.zeros(nb, dtype=bool)
    b_fol[b_index] = fol
    b_run = np.zeros(nb, dtype=np.int64)
    b_run[b_index] = run
    c = sc / n
    n1, n0 = n[b_fol].sum(), n[~b_fol].sum()
    if not (use and n1 >= 20 and n0 >= 20):
        return None
    mu1, mu0 = sc[b_fol].sum() / n1, sc[~b_fol].sum() / n0
    spread = float(np.sum(scc - 2 * np.where(b_fol, mu1, mu0) * sc + n * np.where(b_fol, mu1, mu0) ** 2) / n.sum())
    share = judge_shares[b_run]
    reliability = r_judge
    iterations = 0
    while True:
        iterations += 1
        if spread < 1e-9 or mu1 <= mu0 or iterations > 50:
            break
        o = _rate_from_share(share, reliability)
        wt = follow_chance(b_fol, reliability, o, c, mu1, mu0, spread)
        s1, s0 = float(np.sum(n * wt)), float(np.sum(n * (1 - wt)))
        if s1 < 1e-9 or s0 < 1e-9:
            break
        sc1, sc0 = float(np.sum(wt * sc)), float(np.sum((1 - wt) * sc))
        scc1, scc0 = float(np.sum(wt * scc)), float(np.sum((1 - wt) * scc))
        moved = max(abs(sc1 / s1 - mu1), abs(sc0 / s0 - mu0))
        mu1, mu0 = sc1 / s1, sc0 / s0
        spread = max((scc1 - sc1 * sc1 / s1 + scc0 - sc0 * sc0 / s0) / (s1 + s0), 0.0)
        if fit_reliability:
            agree = float(np.sum(n * np.where(b_fol, wt, 1 - wt)))
            fitted = min(max((agree + 100 * r_judge) / (n.sum() + 100), 0.5), 0.995)
            moved = max(moved, abs(fitted - reliability))
            reliability = fitted
        if moved < 1e-5:
            break
    if spread >= 1e-9 and mu1 > mu0:
        return mu1, mu0, spread, iterations, reliability
    return None


def _parabola_peak(values: dict[float, float]) -> float:
    """The argmax of a function known on a grid: the vertex of the parabola through the best point and
    its two neighbours, kept between them (the best point itself at an end of the grid)."""
    grid = sorted(values)
    best = max(range(len(grid)), key=lambda i: values[grid[i]])
    if best == 0 or best == len(grid) - 1:
        return grid[best]
    x0, x1, x2 = grid[best - 1], grid[best], grid[best + 1]
    y0, y1, y2 = values[x0], values[x1], values[x2]
    denominator = (x0 - x1) * (x0 - x2) * (x1 - x2)
    a = (x2 * (y1 - y0) + x1 * (y0 - y2) + x0 * (y2 - y1)) / denominator
    b = (x2 * x2 * (y0 - y1) + x1 * x1 * (y2 - y0) + x0 * x0 * (y1 - y2)) / denominator
    if a >= 0:
        return x1
    return min(max(-b / (2 * a), x0), x2)


def _aitken_step(step, last_step):
    """The steps still to come of a quantity whose steps shrink by a steady ratio (at most 0.95), else None."""
    if step * last_step > 0 and abs(step) < abs(last_step):
        ratio = min(step / last_step, 0.95)
        return step * ratio / (1 - ratio)
    return None


def fit_blame(evidence: Evidence, params: BlameParameters, previous: PreviousFit | None = None) -> BlameFit:
    """The misleading probability of every tip with a scored unit.

    With ``previous`` (an incremental fit): every tip starts from its stored probability and the
    skill-wide figures from the stored ones; only tips whose evidence changed are swept (in the
    exact fit, the blocks holding one), the rest held, their contributions to the skill-wide
    figures counted as they stand (d is profiled again, each grid point's fit warm-started so).
    """
    params.check()
    jr, er = params.judge_reliability, params.embedding_reliability
    d, eps, prior = params.misleading_failure, params.unexplained_harm, params.prior_misleading
    # Verdicts with a reliability: the judge's and the cosine's thresholded one.
    has_r = (evidence.source == SOURCE_CODES["judge"]) | (evidence.source == SOURCE_CODES["embedding"])
    n_runs = max(len(evidence.runs), int(evidence.run.max()) + 1 if evidence.rows else 0, 1)
    shares = _verdict_shares(evidence.run, evidence.source, evidence.followed, has_r, n_runs)
    normals = _cosine_normals(evidence, shares[:, SOURCE_CODES["judge"]], jr, params.cosine_with_judge == 1,
                              params.fit_judge_reliability == 1)
    summary: dict[str, Any] = {
        "blame.judge_reliability": jr, "blame.embedding_reliability": er,
        "blame.misleading_failure": d, "blame.unexplained_harm": eps,
        "blame.prior_misleading": prior, "blame.max_sweeps": params.max_sweeps,
        "blame.cosine_with_judge": int(params.cosine_with_judge), "blame.max_work": params.max_work,
        "blame.fit_judge_reliability": int(params.fit_judge_reliability),
        "follow_cosine": None,
    }
    if normals is not None:
        mu1, mu0, spread, iterations, fitted_jr = normals
        summary["follow_cosine"] = {"followed_mean": round(mu1, 6), "ignored_mean": round(mu0, 6),
                                    "sd": round(math.sqrt(spread), 6), "iterations": iterations}
        if params.fit_judge_reliability == 1:
            jr = fitted_jr
            summary["fitted_judge_reliability"] = round(jr, 6)
    # Each row's chance that the script followed the tip: its verdict read at the base rate of its
    # run and source (Bayes), a judge's sharpened by its cosine. In slices of a million rows, so that
    # the arithmetic's temporaries stay small beside the log (at 10M rows each is 80 MB).
    reliability_of = np.array([np.nan, jr, er, np.nan])
    base_rates = _rate_from_share(shares, reliability_of[None, :])
    del has_r
    chance = np.full(evidence.rows, 0.5)
    for lo in range(0, evidence.rows, SLICE):
        hi = min(lo + SLICE, evidence.rows)
        source, followed, run = evidence.source[lo:hi], evidence.followed[lo:hi], evidence.run[lo:hi]
        verdict = (followed >= 0) & ((source == SOURCE_CODES["judge"]) | (source == SOURCE_CODES["embedding"]))
        o = np.full(hi - lo, np.nan)
        o[verdict] = base_rates[run[verdict], source[verdict]]
        fol = followed == 1
        part = chance[lo:hi]
        judge = (source == SOURCE_CODES["judge"]) & ~np.isnan(o)
        emb = (source == SOURCE_CODES["embedding"]) & ~np.isnan(o)
        if normals is not None:
            part[judge] = follow_chance(fol[judge], jr, o[judge], evidence.cosine[lo:hi][judge], mu1, mu0, spread)
        else:
            part[judge] = follow_chance(fol[judge], jr, o[judge])
        part[emb] = follow_chance(fol[emb], er, o[emb])
        signal = source == SOURCE_CODES["signal"]
        part[signal] = evidence.follow_probability[lo:hi][signal]
    units = evidence.units()
    f = units.mean(chance)
    del chance
    f = np.where(np.isnan(f), 0.01, np.clip(f, 0.01, 0.99))
    tips, representative, _ = identical_columns(units.tip, units.attempt, f)
    keep = representative[np.searchsorted(tips, units.tip)] == units.tip
    # (Views where every unit is its own representative: at 10M rows each copy is 80 MB.)
    u_tip, u_att, u_rule, u_f = ((units.tip, units.attempt, units.rule, f) if keep.all() else
                                 (units.tip[keep], units.attempt[keep], units.rule[keep], f[keep]))
    del f, keep
    # Attempts over all their rows: the smallest rule, and pass / clean failure / health failure.
    attempts, row_att = evidence.attempts()
    n_att = attempts.size
    att_rule = np.full(n_att, np.iinfo(np.int64).max)
    np.minimum.at(att_rule, row_att, evidence.rule)
    credit_mean = np.bincount(row_att, weights=evidence.credit, minlength=n_att) / np.maximum(
        np.bincount(row_att, minlength=n_att), 1)
    outcome = np.where(evidence.harmful(attempts), 2, np.where(credit_mean > 0, 0, 1))
    del credit_mean
    rules, att_rule_idx = np.unique(att_rule, return_inverse=True)
    att_rule_idx = att_rule_idx.reshape(-1)
    n_rules = rules.size
    reps = np.unique(u_tip)
    if reps.size == 0:
        summary.update({"tips": 0, "converged": True})
        return BlameFit(tips, np.zeros(tips.size), summary)
    # Positions into the tips and attempts: 4 bytes each where they fit (they only index, and the
    # products of two of them below are taken in 8 bytes).
    index = np.int32 if max(reps.size, attempts.size) < np.iinfo(np.int32).max else np.int64
    unit_tip = np.searchsorted(reps, u_tip).astype(index)
    unit_att = np.searchsorted(attempts, u_att).astype(index)
    del u_tip, u_att
    warm = None
    if previous is not None:
        stored_q = previous.lookup(previous.misleading_probability, reps)
        moving = np.isnan(stored_q)
        moving[np.searchsorted(reps, representative[previous.is_changed(tips)])] = True
        stored = previous.summary
        mixture = stored.get("fitted_harm_share_mixture")
        warm = {"q": np.where(np.isnan(stored_q), prior, stored_q), "moving": moving,
                "pi": stored.get("fitted_misleading_share"),
                "mixture": np.array(mixture, dtype=float) if mixture is not None
                and len(mixture) == params.harm_share_points else None}
        summary["refitted_tips"] = int(np.count_nonzero(moving))
    # Home rule: the rule a tip was retrieved for most often (then the smallest), among the attempts' rules.
    in_rules = np.isin(u_rule, rules)
    unit_rule_idx = np.searchsorted(rules, u_rule)
    pair = unit_tip[in_rules].astype(np.int64) * n_rules + unit_rule_idx[in_rules]
    pairs, pair_n = np.unique(pair, return_counts=True)
    del pair, in_rules, unit_rule_idx, u_rule
    p_tip, p_rule = pairs // n_rules, pairs % n_rules
    order = np.lexsort((p_rule, -pair_n, p_tip))
    first = np.ones(order.size, dtype=bool)
    first[1:] = p_tip[order][1:] != p_tip[order][:-1]
    home = np.full(reps.size, -1, dtype=np.int64)
    home[p_tip[order][first]] = p_rule[order][first]
    homed = home >= 0
    # Place: rank among the home rule's tips by id (reps are sorted by id).
    place = np.zeros(reps.size, dtype=np.int64)
    ho = np.lexsort((reps, home))
    ho = ho[homed[ho]]
    hr = home[ho]
    starts = np.flatnonzero(np.concatenate([[True], hr[1:] != hr[:-1]])) if hr.size else np.zeros(0, np.int64)
    run_start = np.repeat(starts, np.diff(np.append(starts, hr.size)))
    place[ho] = np.arange(hr.size) - run_start
    rule_tips = np.bincount(home[homed], minlength=n_rules)
    rule_attempts = np.bincount(att_rule_idx, minlength=n_rules)
    cells = params.base_rate_points * params.harm_share_points
    max_block = params.max_block_tips
    while True:
        work = float(np.sum(np.ceil(np.maximum(rule_tips, 1) / max_block) * 2.0 ** np.minimum(max_block, rule_tips)
                            * rule_attempts)) * cells
        if work <= params.max_work or max_block == 1:
            break
        max_block -= 1
    rep_probability = np.full(reps.size, np.nan)
    if work > params.max_work:
        summary.update({"exact_blame_work": work, "blame_method": "mean_field"})
        if params.fit_misleading_failure == 1:
            # The mean field has no marginal likelihood to compare d by: d stays as configured.
            summary["fitted_misleading_failure"] = None
        q, mf_summary = _mean_field(params, reps.size, unit_tip, unit_att, u_f, att_rule_idx, outcome, n_rules,
                                    place, warm)
        summary.update(mf_summary)
        rep_probability = q
    else:
        def exact(p: BlameParameters):
            return _exact(p, max_block, reps.size, unit_tip, unit_att, u_f, homed, home, place, att_rule_idx,
                          outcome, n_rules, warm)

        judged = float(np.mean(evidence.source == SOURCE_CODES["judge"])) if evidence.rows else 0.0
        if params.fit_misleading_failure == 1 and judged < 0.5:
            # Only d times the chance that the script followed a tip is seen in the outcomes: d is
            # fitted where that chance is fitted too (a judge's verdicts, read against the cosine),
            # not where it rests on a configured reliability (the cosine's thresholded verdict: on the
            # embedding-only world of docs/simulator.md a fitted d took eviction's recall from 0.40 to
            # 0.17).
            summary["fitted_misleading_failure"] = None
            summary["misleading_failure_not_fitted"] = f"{judged:.0%} of the verdicts are the judge's"
            q, exact_summary = exact(params)
        elif params.fit_misleading_failure == 1:
            # d by profile likelihood: the fit's log marginal likelihood at each d of a grid, then the
            # vertex of the parabola through the best and its neighbours (EM cannot move d: at d = 1 a
            # followed misleading tip cannot be in a pass, so a pass clears the tip and never counts
            # against d). On simulated worlds the peak sits at the true rate (0.7 and 1.0).
            evidence_at = {g: exact(replace(params, misleading_failure=g))[1]["blame_log_evidence"] for g in FAILURE_GRID}
            d_fit = _parabola_peak(evidence_at)
            summary["fitted_misleading_failure"] = round(d_fit, 6)
            summary["misleading_failure_evidence"] = {str(g): round(v, 4) for g, v in evidence_at.items()}
            q, exact_summary = exact(replace(params, misleading_failure=d_fit))
        else:
            q, exact_summary = exact(params)
        summary.update({"blame.max_block_tips": params.max_block_tips,
                        "blame.base_rate_points": params.base_rate_points,
                        "blame.harm_share_points": params.harm_share_points,
                        "blame_block_tips": max_block, "blame_work": work})
        summary.update(exact_summary)
        rep_probability = q
    probability = rep_probability[np.searchsorted(reps, representative)]
    return BlameFit(tips, np.clip(probability, 0, 1), summary)


def _colours(place: np.ndarray, unit_tip: np.ndarray, unit_att: np.ndarray, n_tips: int) -> np.ndarray:
    """A colour per tip such that no two tips of one attempt share one, starting from their place.

    Each round moves every tip that shares an attempt with a tip of the same colour and a smaller
    id (the first of each clash keeps its colour) to a colour past all those in use.
    """
    colour = np.array(place, dtype=np.int64)
    for _ in range(64):
        key = unit_att.astype(np.int64) * (n_tips + 1) + colour[unit_tip]
        order = np.lexsort((unit_tip, key))
        k = key[order]
        clash = np.zeros(order.size, dtype=bool)
        clash[1:] = (k[1:] == k[:-1]) & (unit_tip[order][1:] != unit_tip[order][:-1])
        movers = np.unique(unit_tip[order][clash])
        if movers.size == 0:
            break
        colour[movers] += int(colour.max()) + 1
    _, colour = np.unique(colour, return_inverse=True)
    return colour.reshape(-1)


def _mean_field(params: BlameParameters, n_tips: int, unit_tip, unit_att, unit_f, att_rule, outcome, n_rules,
                place, warm: dict | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """Rules at point estimates (their posterior means), each tip updated from its own attempts.

    ``warm``: start from stored probabilities (``q``) and share (``pi``) and sweep the ``moving`` tips
    until they settle, then every tip until all do (a run that ends at ``blame.max_sweeps`` before
    the moving tips settle has not checked the others, and says it did not settle).
    """
    d, eps, prior, max_sweeps = params.misleading_failure, params.unexplained_harm, params.prior_misleading, params.max_sweeps
    pi = prior if warm is None or warm["pi"] is None else min(max(float(warm["pi"]), 0.001), 0.5)
    swept = np.ones(n_tips, dtype=bool) if warm is None else warm["moving"]
    n_att = att_rule.size
    failed = outcome[unit_att] != 0
    all_tip, all_att, all_f = unit_tip[failed], unit_att[failed], unit_f[failed]
    q = np.full(n_tips, prior) if warm is None else np.array(warm["q"], dtype=float)
    step = np.ones(n_tips)
    direction = np.zeros(n_tips)
    passes = np.bincount(att_rule[outcome == 0], minlength=n_rules).astype(float)
    g = (passes + 1) / (np.bincount(att_rule, minlength=n_rules) + 2)
    h = np.full(n_rules, 0.5)
    # Tips of one place in their rule are updated together (a rule's tips one after another), but
    # never two tips of one failed attempt: both would take its blame, or shed it, at once. The
    # failure units of the swept tips are laid out by (phase, tip), so each phase's are one
    # contiguous slice; a held tip's units are in no phase (log_m counts them all the same).
    colour = _colours(place, all_tip, all_att, n_tips)
    n_phases = int(colour.max()) + 1 if n_tips else 0
    log_m = np.bincount(all_att, weights=np.log(1 - d * all_f * q[all_tip]), minlength=n_att)

    def layout(swept: np.ndarray):
        phase = np.where(swept, colour, n_phases)
        units = np.flatnonzero(swept[all_tip]) if not swept.all() else np.arange(all_tip.size)
        order = units[np.lexsort((all_tip[units], phase[all_tip[units]]))]
        lt, la = all_tip[order], all_att[order]
        arrays = (lt, la, d * all_f[order], att_rule[la], outcome[la] == 2)
        phase_start = np.searchsorted(phase[lt], np.arange(n_phases + 1))
        phases = []
        for k in range(n_phases):
            lo, hi = int(phase_start[k]), int(phase_start[k + 1])
            members = np.flatnonzero(phase == k)
            if members.size == 0:
                continue
            t = lt[lo:hi]
            tip_starts = np.flatnonzero(np.concatenate([[True], t[1:] != t[:-1]])) if t.size else np.zeros(0, np.int64)
            by_attempt = np.argsort(la[lo:hi], kind="stable")
            a_sorted = la[lo:hi][by_attempt]
            att_starts = (np.flatnonzero(np.concatenate([[True], a_sorted[1:] != a_sorted[:-1]])) if t.size
                          else np.zeros(0, np.int64))
            phases.append((members, lo, hi, tip_starts, np.searchsorted(members, t[tip_starts]), by_attempt,
                           att_starts, a_sorted[att_starts]))
        return arrays, phases

    # An incremental fit sweeps the changed tips until they settle, then every tip until all do:
    # what it returns is a fixed point of the whole sweep, as a full fit's is.
    held = not swept.all()
    (f_tip, f_att, f_fd, f_rule, f_health), phases = layout(swept)
    if not held:
        del all_f, all_tip, all_att  # the layout's copies are all a full fit needs
    failed_att = np.flatnonzero(outcome != 0)
    fa_rule = att_rule[failed_att]
    fa_health = outcome[failed_att] == 2
    # A pass's term, ln(1 - d f), does not move between sweeps: summed once per tip; each failed
    # attempt's log factor from the current probabilities, moved as its tips move.
    pass_delta = np.bincount(unit_tip[~failed], weights=np.log(1 - d * unit_f[~failed]), minlength=n_tips)

    def rule_update(g, h):
        # Each rule: a failure is its own with the responsibility M (1 - g) e / L, a misleading tip's otherwise.
        m = np.exp(np.maximum(log_m[failed_att], -700))
        gr, hr = g[fa_rule], h[fa_rule]
        own = np.where(fa_health, m * (1 - gr) * eps / ((1 - m) * hr + m * (1 - gr) * eps + TINY),
                       m * (1 - gr) * (1 - eps) / ((1 - m) * (1 - hr) + m * (1 - gr) * (1 - eps) + TINY))
        own_fail = np.bincount(fa_rule, weights=own, minlength=n_rules)
        misled = np.bincount(fa_rule, weights=1 - own, minlength=n_rules)
        harm = np.bincount(fa_rule[fa_health], weights=1 - own[fa_health], minlength=n_rules)
        # A rule's harm share is drawn towards the skill's, as if 10 more of its failures had been a misleading tip's.
        skill_harm = (harm.sum() + 1) / (misled.sum() + 2)
        return (passes + 1) / (passes + own_fail + 2), (harm + 10 * skill_harm) / (misled + 10)

    if warm is not None and n_rules:
        # The rules' point estimates that go with the stored probabilities, before any tip moves.
        for _ in range(50):
            new_g, new_h = rule_update(g, h)
            settled = max(float(np.max(np.abs(new_g - g))), float(np.max(np.abs(new_h - h)))) < 1e-6
            g, h = new_g, new_h
            if settled:
                break
    sweep, converged, moving, tip_change = 0, False, 0, 0.0
    while True:
        sweep += 1
        change = 0.0
        moving = 0
        logit_pi = math.log(pi / (1 - pi))
        # A failure's likelihood is A - M C with, for a failure that broke the system, A = h and
        # C = h - (1 - g) eps, for a clean one A = 1 - h and C = (1 - h) - (1 - g)(1 - eps): the
        # tip's evidence is ln(A - M' C) - ln(A - M C), M' the factor with the tip misleading.
        h_unit, g_unit = h[f_rule], g[f_rule]
        share = np.where(f_health, h_unit, 1 - h_unit)
        slope = share - (1 - g_unit) * np.where(f_health, eps, 1 - eps)
        for members, lo, hi, tip_starts, tip_slots, by_attempt, att_starts, attempts in phases:
            old_q = q[members]
            delta = pass_delta[members]  # fancy indexing: a copy
            if hi > lo:
                fd = f_fd[lo:hi]
                t = f_tip[lo:hi]
                q_unit = q[t]
                log_keep = np.log(1 - fd * q_unit)
                m0 = np.exp(np.maximum(log_m[f_att[lo:hi]] - log_keep, -700))
                a_, c_ = share[lo:hi], slope[lo:hi]
                evidence = np.log(a_ - m0 * (1 - fd) * c_ + TINY) - np.log(a_ - m0 * c_ + TINY)
                delta[tip_slots] += np.add.reduceat(evidence, tip_starts)
            nq = 1 / (1 + np.exp(np.clip(-(logit_pi + delta), -700, 700)))
            # Resilient steps: half the step on a turn, a fifth longer on a run (first half of the sweeps only).
            moved = nq - old_q
            heading = moved * direction[members]
            st = step[members]
            st = np.where(heading < 0, st / 2, np.where((heading > 0) & (2 * sweep <= max_sweeps),
                                                        np.minimum(1.0, st * 1.2), st))
            step[members] = st
            direction[members] = np.sign(moved)
            nq = old_q + st * moved
            new_q = np.where(np.abs(nq - old_q) > 1e-12, nq, old_q)
            q[members] = new_q
            if hi > lo:
                diff = np.log(1 - fd * q[t]) - log_keep
                log_m[attempts] += np.add.reduceat(diff[by_attempt], att_starts)
            moves = np.abs(new_q - old_q)
            if moves.size:
                change = max(change, float(moves.max()))
            moving += int(np.count_nonzero(moves > 1e-3))
        tip_change = change
        new_g, new_h = rule_update(g, h)
        if n_rules:
            change = max(change, float(np.max(np.abs(new_g - g))), float(np.max(np.abs(new_h - h))))
        g, h = new_g, new_h
        old_pi = pi
        pi = min(max((q.sum() + 10 * prior) / (n_tips + 10), 0.001), 0.5)
        change = max(change, abs(pi - old_pi))
        converged = change < SETTLED
        if converged and held:
            held, converged = False, False
            (f_tip, f_att, f_fd, f_rule, f_health), phases = layout(np.ones(n_tips, dtype=bool))
        if converged or sweep >= max_sweeps:
            break
    summary = {"blame_sweeps": sweep, "blame_converged": converged, "fitted_misleading_share": round(pi, 6),
               "blame_work": 2 * int(failed.sum()) + n_att, "blame_moving_tips": moving,
               "blame_last_tip_change": round(tip_change, 6)}
    return q, summary


def _exact(params: BlameParameters, max_block: int, n_tips: int, unit_tip, unit_att, unit_f, homed, home, place,
           att_rule, outcome, n_rules, warm: dict | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """Exact per block: every subset of a block's tips with the (pass rate, harm share) grid.

    ``warm``: start from stored probabilities, share and harm-share mixture; the first sweep updates
    every block, later ones only the blocks holding a ``moving`` tip, the others' contributions to
    the mixture and the evidence kept from the first.
    """
    d, eps, prior, max_sweeps = params.misleading_failure, params.unexplained_harm, params.prior_misleading, params.max_sweeps
    points, harm_points = params.base_rate_points, params.harm_share_points
    gp, hp = np.meshgrid(np.arange(1, points + 1), np.arange(1, harm_points + 1), indexing="ij")
    cell_g = ((gp - 0.5) / points).reshape(-1)
    cell_h = ((hp - 0.5) / harm_points).reshape(-1)
    cell_k = (hp - 1).reshape(-1)
    n_att = att_rule.size
    # Blocks: each rule's tips in chunks of max_block by place; every rule has at least one block.
    rule_tips = np.bincount(home[homed], minlength=n_rules)
    chunks = np.maximum(rule_tips - 1, 0) // max_block + 1
    block_rule = np.repeat(np.arange(n_rules), chunks)
    block_chunk = np.arange(block_rule.size) - np.repeat(np.cumsum(chunks) - chunks, chunks)
    block_start = np.cumsum(chunks) - chunks  # first block of each rule
    tip_block = np.full(n_tips, -1)
    tip_block[homed] = block_start[home[homed]] + place[homed] // max_block
    tip_bit = place % max_block
    block_size = np.bincount(tip_block[homed], minlength=block_rule.size)
    # Units whose tip has a block; the rest are dropped, as tips with no rule among the attempts'.
    ok = tip_block[unit_tip] >= 0
    unit_tip, unit_att, unit_f = unit_tip[ok], unit_att[ok], unit_f[ok]
    unit_log = np.log(1 - d * unit_f + TINY)
    unit_block = tip_block[unit_tip]
    # Block-attempt rows: the rule's own attempts, and those elsewhere that retrieved a block tip.
    att_of_rule_order = np.argsort(att_rule, kind="stable")
    rule_att_start = np.concatenate([[0], np.cumsum(np.bincount(att_rule, minlength=n_rules))])
    per_block_own = rule_att_start[block_rule + 1] - rule_att_start[block_rule]
    own_block = np.repeat(np.arange(block_rule.size), per_block_own)
    offset = np.arange(own_block.size) - np.repeat(np.cumsum(per_block_own) - per_block_own, per_block_own)
    own_att = att_of_rule_order[np.repeat(rule_att_start[block_rule], per_block_own) + offset]
    pair_key = np.unique(np.concatenate([own_block * n_att + own_att, unit_block * n_att + unit_att.astype(np.int64)]))
    row_block, row_att = pair_key // n_att, pair_key % n_att
    row_own = att_rule[row_att] == block_rule[row_block]
    row_outcome = outcome[row_att]
    # Each row's in-block units (bit, log factor) and which units of the attempt are outside it.
    unit_row = np.searchsorted(pair_key, unit_block * n_att + unit_att.astype(np.int64))
    q = np.full(n_tips, prior)
    base = np.full(n_rules, 0.5)
    harm_prior = np.full(harm_points, 1.0 / harm_points)
    pi = prior
    block_changed = np.ones(block_rule.size, dtype=bool)
    if warm is not None:
        q = np.array(warm["q"], dtype=float)
        if warm["pi"] is not None:
            pi = min(max(float(warm["pi"]), 0.001), 0.5)
        if warm["mixture"] is not None:
            harm_prior = np.array(warm["mixture"], dtype=float)
        block_changed = np.bincount(tip_block[homed & warm["moving"]], minlength=block_rule.size) > 0
    last_pi_step, since_jump = 0.0, 0
    mix_since, last_mix_step = 0, None
    sweep, converged, change = 0, False, 0.0
    # Static per (chunk position, block size, changed) groups of rows.
    groups = []
    for chunk in range(int(block_chunk.max()) + 1 if block_chunk.size else 0):
        for n in np.unique(block_size[block_chunk == chunk]):
            for changed in (True, False):
                blocks = np.flatnonzero((block_chunk == chunk) & (block_size == n) & (block_changed == changed))
                if blocks.size:
                    group = _Group(blocks, int(n), chunk == 0, row_block, row_att, row_own, row_outcome, unit_row,
                                   unit_tip, unit_log, tip_bit, tip_block, block_rule, att_rule)
                    group.changed = changed
                    groups.append(group)
    held_harm, held_evidence = np.zeros(harm_points), 0.0
    while True:
        sweep += 1
        change = 0.0
        harm_acc = np.array(held_harm)
        log_evidence = held_evidence
        for group in groups:
            if sweep > 1 and not group.changed:
                continue
            # Every attempt's expected log factor with the current posteriors.
            logs_q = np.log(1 - d * unit_f * q[unit_tip] + TINY)
            att_log = np.bincount(unit_att, weights=logs_q, minlength=n_att)
            new_q, new_base, harm = group.update(att_log, logs_q, q, base, harm_prior, pi, cell_g, cell_h, cell_k,
                                                 eps)
            tips = group.tips
            if tips.size:
                change = max(change, float(np.max(np.abs(new_q - q[tips]))))
                q[tips] = new_q
            base[block_rule[group.blocks]] = new_base
            harm_acc += harm
            log_evidence += group.log_evidence
            if sweep == 1 and not group.changed:
                held_harm += harm
                held_evidence += group.log_evidence
        old_pi = pi
        pi = min(max((q.sum() + 10 * prior) / (n_tips + 10), 0.001), 0.5)
        pi_step = pi - old_pi
        since_jump += 1
        if since_jump >= 3:
            ahead = _aitken_step(pi_step, last_pi_step)
            if ahead is not None:
                jumped = min(max(pi + ahead, 0.001), 0.5)
                if jumped != pi:
                    pi = jumped
                    since_jump = 0
        last_pi_step = pi_step
        change = max(change, abs(pi - old_pi))
        mix_new = (harm_acc + 1) / (n_rules + harm_points)
        change = max(change, float(np.max(np.abs(harm_prior - mix_new))))
        mix_step = mix_new - harm_prior
        harm_prior = mix_new
        mix_since += 1
        if mix_since >= 3 and last_mix_step is not None:
            ahead_steps = [_aitken_step(s, ls) for s, ls in zip(mix_step, last_mix_step)]
            if all(a is not None for a in ahead_steps):
                floor = 1.0 / (n_rules + harm_points)
                moved = np.maximum(harm_prior + np.array(ahead_steps), floor)
                moved = moved / moved.sum()
                if not np.array_equal(moved, harm_prior):
                    change = max(change, float(np.max(np.abs(moved - harm_prior))))
                    harm_prior = moved
                    mix_since = 0
        last_mix_step = mix_step
        converged = change < SETTLED
        if converged and any(not group.changed for group in groups):
            # The changed blocks have settled: now every block, until all have (a fixed point of the whole sweep).
            for group in groups:
                group.changed = True
            held_harm, held_evidence, converged = np.zeros(harm_points), 0.0, False
        if converged or sweep >= max_sweeps:
            break
    partitioned = bool(np.any(block_chunk > 0))
    summary = {"blame_method": "partitioned" if partitioned else "exact", "blame_sweeps": sweep,
               "blame_log_evidence": round(log_evidence, 4),
               "blame_converged": converged, "fitted_misleading_share": round(pi, 6),
               "fitted_harm_share_mixture": [round(float(x), 6) for x in harm_prior]}
    return q, summary


class _Group:
    """Blocks of one chunk position and one size n, with their block-attempt rows, as arrays."""

    def __init__(self, blocks, n, first_chunk, row_block, row_att, row_own, row_outcome, unit_row, unit_tip,
                 unit_log, tip_bit, tip_block, block_rule, att_rule):
        self.blocks = blocks
        self.n = n
        self.first_chunk = first_chunk  # a rule's first block: counts the rule's harm share once
        slot = np.full(block_rule.size, -1)
        slot[blocks] = np.arange(blocks.size)
        rows = np.flatnonzero(slot[row_block] >= 0)
        self.rows = rows
        self.row_slot = slot[row_block[rows]]
        self.row_att = row_att[rows]
        self.row_own = row_own[rows]
        self.row_outcome = row_outcome[rows]
        self.other_rule = att_rule[self.row_att]
        # In-block units of these rows: their bit and log factor, in a [rows, n] matrix.
        local = np.full(row_block.size, -1)
        local[rows] = np.arange(rows.size)
        # A unit's row is (its tip's block, its attempt): the rows of this group hold their units.
        u_local = local[unit_row]
        in_block = u_local >= 0
        self.in_units = np.flatnonzero(in_block)
        self.in_row = u_local[in_block]
        self.in_bit = tip_bit[unit_tip[in_block]]
        self.set_logs(unit_log)
        sets = np.arange(1 << n)
        self.bits = ((sets[:, None] >> np.arange(max(n, 1))[None, :]) & 1).astype(float)[:, :max(n, 1)]
        if n == 0:
            self.bits = np.zeros((1, 1))
        self.set_size = self.bits.sum(axis=1)
        self.indicator = sparse.csr_matrix((np.ones(rows.size), (self.row_slot, np.arange(rows.size))),
                                           shape=(blocks.size, rows.size))
        self.by_row = self.indicator.tocsc()
        self.passes_own = np.bincount(self.row_slot[(self.row_outcome == 0) & self.row_own], minlength=blocks.size)
        # The block's tips, by (block, bit): tips[slot * n + bit].
        members = np.flatnonzero(np.isin(tip_block, blocks))
        order = np.lexsort((tip_bit[members], slot[tip_block[members]]))
        self.tips = members[order]
        self.tip_slot = slot[tip_block[self.tips]]
        self.tip_bit = tip_bit[self.tips]

    def set_logs(self, unit_log: np.ndarray) -> None:
        """The in-block units' log factors ln(1 - d f), as a [rows, n] matrix (again when d moves)."""
        self.logs = np.zeros((self.rows.size, max(self.n, 1)))
        if self.n:
            np.add.at(self.logs, (self.in_row, self.in_bit), unit_log[self.in_units])

    def update(self, att_log, logs_q, q, base, harm_prior, pi, cell_g, cell_h, cell_k, eps):
        n_sets = self.bits.shape[0]
        cells = cell_g.size
        inside = np.bincount(self.in_row, weights=logs_q[self.in_units], minlength=self.rows.size)
        out_log = att_log[self.row_att] - inside
        pattern = out_log[:, None] + self.logs @ self.bits.T  # [rows, sets]
        m = np.exp(np.maximum(pattern, -700))
        own, fail, health = self.row_own, self.row_outcome != 0, self.row_outcome == 2
        g_other = base[self.other_rule][:, None]
        per_set = np.zeros((self.rows.size, n_sets))
        sel = own & ~fail
        per_set[sel] = pattern[sel]
        sel = ~own & ~fail
        per_set[sel] = pattern[sel] + np.log(g_other[sel])
        sel = ~own & health
        per_set[sel] = np.log((1 - m[sel]) * 0.5 + m[sel] * (1 - g_other[sel]) * eps + TINY)
        sel = ~own & fail & ~health
        per_set[sel] = np.log((1 - m[sel]) * 0.5 + m[sel] * (1 - g_other[sel]) * (1 - eps) + TINY)
        ll_set = self.indicator @ per_set  # [blocks, sets]
        ll = np.zeros((self.blocks.size, n_sets, cells))
        own_fail = np.flatnonzero(own & fail)
        chunk = max(1, int(4_000_000 // max(n_sets * cells, 1)))
        for start in range(0, own_fail.size, chunk):
            idx = own_fail[start:start + chunk]
            mm = m[idx][:, :, None]
            hh = health[idx][:, None, None]
            term = np.log(np.where(hh, (1 - mm) * cell_h + mm * (1 - cell_g) * eps,
                                   (1 - mm) * (1 - cell_h) + mm * (1 - cell_g) * (1 - eps)) + TINY)
            ll += (self.by_row[:, idx] @ term.reshape(idx.size, -1)).reshape(ll.shape)
        ll += ll_set[:, :, None]
        ll += (self.passes_own[:, None] * np.log(cell_g)[None, :])[:, None, :]
        ll += np.log(harm_prior[cell_k])[None, None, :]
        ll += (self.set_size * math.log(pi) + (self.n - self.set_size) * math.log(1 - pi))[None, :, None]
        top = ll.reshape(self.blocks.size, -1).max(axis=1)
        weight = np.exp(ll - top[:, None, None])
        total = weight.sum(axis=(1, 2))
        # Each block's log marginal likelihood (its subsets and cells summed out), the others held.
        self.log_evidence = float(np.sum(np.log(total) + top))
        set_weight = weight.sum(axis=2) / total[:, None]  # [blocks, sets]
        cell_weight = weight.sum(axis=1) / total[:, None]  # [blocks, cells]
        new_base = cell_weight @ cell_g
        harm = np.zeros(harm_prior.size)
        if self.first_chunk:
            np.add.at(harm, cell_k, cell_weight.sum(axis=0))
        tip_q = (set_weight @ self.bits)[self.tip_slot, self.tip_bit] if self.tips.size else np.zeros(0)
        return tip_q, new_base, harm
