"""Per-tip effects: penalised logistic regression of the attempt's outcome on its tips' follow weights.

The model (docs/model.md, "Per-tip effects"): an attempt's success share ``y`` (its graded outcome, a
failure 0) is Bernoulli with log-odds ``alpha_rule + sum_t w_t beta_t`` over the tips it retrieved,
``w_t`` the tip's follow weight in it; a ridge penalty ``effects.ridge_lambda`` on every ``beta`` and
a token 1e-4 on the intercepts (enough to keep a rule whose attempts all fail finite). Tips with the
same weights in the same attempts are one column (:func:`groups.identical_columns`); a tip's group
is the set of tips linked to it through shared rules (its connected component).

One Newton iteration solves ``H step = g`` for every group at once (``H = X'WX + P`` is block
diagonal by group) by conjugate gradients, preconditioned by the exact inverse of each group's
matrix where the group has at most ``effects.max_component_tips`` columns, else of each rule's
block (its intercept and the tips retrieved mostly for it). Iterations stop when no tip effect
moves by 1e-6 (``effects.max_iterations`` at most; a step larger than 5 on the log-odds scale is
shortened). The std errors are the inverse's diagonal of the group's matrix (method ``exact``) or,
for a larger group, of the tip's rule block with the other blocks held fixed (``blockwise``, at
most the exact one), both at the final estimates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from ctxgraph.fit.groups import identical_columns
from ctxgraph.fit.evidence import Evidence, PreviousFit

__all__ = ["EffectsFit", "fit_effects"]

INTERCEPT_PENALTY = 1e-4


@dataclass
class EffectsFit:
    """The fit of every tip with evidence (arrays aligned on ``tips``)."""

    tips: np.ndarray
    representative: np.ndarray
    co_followed: np.ndarray
    effect: np.ndarray
    variance: np.ndarray
    attempts: np.ndarray
    followed_attempts: np.ndarray
    component_tips: np.ndarray
    method: np.ndarray  # 'exact' or 'blockwise'
    iterations: int
    converged: bool


def _batched_inverse_diagonal(matrix: sparse.csr_matrix, block_of: np.ndarray, local: np.ndarray,
                              block_size: np.ndarray, want_inverse: bool = False):
    """For each block (a set of columns), the diagonal of the inverse of its principal submatrix.

    Blocks are grouped by size and inverted as stacks of dense matrices. With ``want_inverse``
    also returns, per size class, the stacked inverses (for the preconditioner).
    """
    coo = matrix.tocoo()
    same = block_of[coo.row] == block_of[coo.col]
    rows, cols, vals = coo.row[same], coo.col[same], coo.data[same]
    blocks = block_of[rows]
    diagonal = np.zeros(matrix.shape[0])
    inverses = []
    for size in np.unique(block_size):
        members = np.flatnonzero(block_size == size)
        slot = np.full(block_size.shape[0], -1)
        slot[members] = np.arange(members.size)
        stack = np.zeros((members.size, size, size))
        keep = slot[blocks] >= 0
        stack[slot[blocks[keep]], local[rows[keep]], local[cols[keep]]] = vals[keep]
        inverse = np.linalg.inv(stack)
        columns = np.flatnonzero(slot[block_of] >= 0)
        diagonal[columns] = inverse[slot[block_of[columns]], local[columns], local[columns]]
        if want_inverse:
            inverses.append((members, inverse))
    return (diagonal, inverses) if want_inverse else diagonal


def _components(u_tip: np.ndarray, u_rule: np.ndarray):
    """The representatives, their columns, the rules, and each column's group (rules first, then tips)."""
    reps = np.unique(u_tip)
    tip_col = np.searchsorted(reps, u_tip)
    rules = np.unique(u_rule)
    rule_col_of_unit = np.searchsorted(rules, u_rule)
    p = rules.size + reps.size
    # The graph's edges are the distinct (tip, rule) pairs, far fewer than the units.
    pairs = np.unique(tip_col.astype(np.int64) * rules.size + rule_col_of_unit)
    link = sparse.coo_matrix((np.ones(pairs.size), (rules.size + pairs // rules.size, pairs % rules.size)),
                             shape=(p, p))
    _, component = csgraph.connected_components(link, directed=False)
    return reps, tip_col, rules, rule_col_of_unit, component


def fit_effects(evidence: Evidence, *, ridge_lambda: float, max_component_tips: int, max_iterations: int,
                previous: PreviousFit | None = None) -> EffectsFit:
    """Fit every group of linked tips; with ``previous`` (an incremental fit) only the groups where
    a tip's evidence changed, from the stored estimates, the others keeping their stored figures.

    The groups are independent problems (no attempt spans two), so a group with nothing new has
    the optimum it had; and each group's problem is convex, so a warm start changes how many
    Newton steps a changed group takes, not where it ends.
    """
    rows = evidence.units()
    w = rows.mean(evidence.follow_weight)
    y = rows.mean(evidence.credit)
    tips, representative, members = identical_columns(rows.tip, rows.attempt, w)
    # Only representatives enter the fit.
    keep = representative[np.searchsorted(tips, rows.tip)] == rows.tip
    # (Views, not copies, where every unit is its own representative: at 10M rows each copy is 80 MB.)
    u_tip, u_att, u_rule, u_w, u_y = ((rows.tip, rows.attempt, rows.rule, w, y) if keep.all() else
                                      (rows.tip[keep], rows.attempt[keep], rows.rule[keep], w[keep], y[keep]))
    del w, y, keep
    if u_tip.size == 0:
        empty = np.zeros(0)
        return EffectsFit(tips, representative, members, empty, empty, np.zeros(0, np.int64), empty,
                          np.zeros(0, np.int64), np.zeros(0, dtype=object), 0, True)
    reps, tip_col, rules, _, component = _components(u_tip, u_rule)
    n_rules, n_tips = rules.size, reps.size
    tip_component = component[n_rules:]
    group_columns = np.bincount(component, minlength=component.max() + 1)
    effect = np.zeros(n_tips)
    variance = np.zeros(n_tips)
    large = np.zeros(n_tips, dtype=bool)
    active = np.ones(n_tips, dtype=bool)
    if previous is not None:
        stored = previous.lookup(previous.effect, reps)
        stale = np.isnan(stored)
        stale[np.searchsorted(reps, representative[previous.is_changed(tips)])] = True
        active_group = np.zeros(group_columns.size, dtype=bool)
        active_group[tip_component[stale]] = True
        active = active_group[tip_component]
        effect = np.where(np.isnan(stored), 0.0, stored)
        variance = previous.lookup(previous.std_error, reps) ** 2
        large = previous.lookup((previous.method == "blockwise").astype(float), reps, 0.0) == 1
    iterations, converged = 0, True
    support_attempts = np.bincount(tip_col, minlength=n_tips)
    support_followed = np.bincount(tip_col, weights=u_w, minlength=n_tips)
    if active.any():
        if active.all():
            fitted = _newton(u_tip, u_att, u_rule, u_w, u_y, effect, reps, ridge_lambda, max_component_tips,
                             max_iterations)
        else:
            unit_active = active[tip_col]
            fitted = _newton(u_tip[unit_active], u_att[unit_active], u_rule[unit_active], u_w[unit_active],
                             u_y[unit_active], effect, reps, ridge_lambda, max_component_tips, max_iterations)
        at = np.flatnonzero(active)
        effect[at], variance[at], large[at], iterations, converged = fitted
    # Every tip with evidence reads its representative's figures.
    rep_index = np.searchsorted(reps, representative)
    return EffectsFit(
        tips=tips,
        representative=representative,
        co_followed=members,
        effect=effect[rep_index],
        variance=variance[rep_index],
        attempts=support_attempts[rep_index],
        followed_attempts=support_followed[rep_index],
        component_tips=np.bincount(tip_component, minlength=group_columns.size)[tip_component[rep_index]],
        method=np.where(large[rep_index], "blockwise", "exact"),
        iterations=iterations,
        converged=converged,
    )


def _newton(u_tip, u_att, u_rule, u_w, u_y, start, all_reps, ridge_lambda, max_component_tips, max_iterations):
    """Newton's method over these units' groups, from ``start`` (aligned with ``all_reps``); returns
    the effects, variances and whether each tip's group was past ``max_component_tips`` (aligned
    with the units' representatives, a subset of ``all_reps`` in order), the iterations and whether
    it converged."""
    reps, tip_col, rules, rule_col_of_unit, component = _components(u_tip, u_rule)
    n_rules, n_tips = rules.size, reps.size
    attempts, att_index = np.unique(u_att, return_inverse=True)
    att_index = att_index.reshape(-1)
    n_att = attempts.size
    # The attempt's target (its units' mean outcome, in [0, 1]) and rule (the smallest).
    target = np.clip(np.bincount(att_index, weights=u_y, minlength=n_att) / np.bincount(att_index, minlength=n_att), 0, 1)
    att_rule = np.full(n_att, np.iinfo(np.int64).max)
    np.minimum.at(att_rule, att_index, u_rule)
    p = n_rules + n_tips
    att_rule_col = np.searchsorted(rules, att_rule)
    att_component = component[att_rule_col]
    # The design: the attempt's intercept, then each tip whose group is the attempt's, weight != 0.
    entry = (u_w != 0) & (component[n_rules + tip_col] == att_component[att_index])
    # Positions as 4-byte integers where they fit (at 10M rows the coordinates are 0.2 GB less).
    index = np.int32 if max(n_att, p) < np.iinfo(np.int32).max else np.int64
    x_rows = np.concatenate([np.arange(n_att, dtype=index), att_index[entry].astype(index)])
    x_cols = np.concatenate([att_rule_col.astype(index), (n_rules + tip_col[entry]).astype(index)])
    x_vals = np.concatenate([np.ones(n_att), u_w[entry]])
    design = sparse.csr_matrix((x_vals, (x_rows, x_cols)), shape=(n_att, p))
    del x_rows, x_cols, x_vals, entry, att_index, u_w, u_y, u_att
    design_t = design.T.tocsr()
    entry_row = np.repeat(np.arange(n_att, dtype=index), np.diff(design.indptr))
    penalty = np.concatenate([np.full(n_rules, INTERCEPT_PENALTY), np.full(n_tips, ridge_lambda)])
    # Variance blocks: a small group whole; a large group's rule blocks (intercept + home tips).
    group_columns = np.bincount(component, minlength=component.max() + 1)
    pair = tip_col * n_rules + rule_col_of_unit
    pairs, pair_n = np.unique(pair, return_counts=True)
    pair_tip, pair_rule = pairs // n_rules, pairs % n_rules
    # Home rule: most units, then the smallest rule (pairs are sorted by tip, then rule).
    order = np.lexsort((pair_rule, -pair_n, pair_tip))
    first = np.ones(order.size, dtype=bool)
    first[1:] = pair_tip[order][1:] != pair_tip[order][:-1]
    home = np.empty(n_tips, dtype=np.int64)
    home[pair_tip[order][first]] = pair_rule[order][first]
    large = group_columns[component] > max_component_tips
    block_of = np.where(large, np.concatenate([np.arange(n_rules), home]) + group_columns.size, component)
    _, block_of = np.unique(block_of, return_inverse=True)
    block_of = block_of.reshape(-1)
    n_blocks = block_of.max() + 1
    order = np.argsort(block_of, kind="stable")
    block_size = np.bincount(block_of, minlength=n_blocks)
    starts = np.concatenate([[0], np.cumsum(block_size)[:-1]])
    local = np.empty(p, dtype=np.int64)
    local[order] = np.arange(p) - starts[block_of[order]]
    block_columns_matrix = _block_columns(order, block_of, block_size, starts)
    theta = np.zeros(p)
    tip_slice = slice(n_rules, p)
    theta[tip_slice] = start[np.searchsorted(all_reps, reps)]
    if np.any(theta[tip_slice] != 0):
        theta[:n_rules] = _intercepts(design, att_rule_col, target, theta, n_rules)
    converged = False
    iterations = 0
    for iterations in range(1, max_iterations + 1):
        eta = design @ theta
        prob = 1 / (1 + np.exp(-np.clip(eta, -30, 30)))
        weight = np.maximum(prob * (1 - prob), 1e-9)
        gradient = design_t @ (target - prob) - penalty * theta
        hessian = _information(design, design_t, entry_row, weight, penalty)
        _, inverses = _batched_inverse_diagonal(hessian, block_of, local, block_size, want_inverse=True)
        step = _conjugate_gradient(hessian, gradient, inverses, block_columns_matrix)
        largest = np.max(np.abs(step)) if step.size else 0.0
        if largest > 5:
            step *= 5 / largest
        theta += step
        change = np.max(np.abs(step[tip_slice])) if n_tips else 0.0
        if change < 1e-6:
            converged = True
            break
    # Variances at the final estimates.
    eta = design @ theta
    prob = 1 / (1 + np.exp(-np.clip(eta, -30, 30)))
    weight = np.maximum(prob * (1 - prob), 1e-9)
    hessian = _information(design, design_t, entry_row, weight, penalty)
    variance = _batched_inverse_diagonal(hessian, block_of, local, block_size)
    return theta[tip_slice], variance[tip_slice], large[n_rules:], iterations, converged


def _intercepts(design: sparse.csr_matrix, att_rule_col: np.ndarray, target: np.ndarray, theta: np.ndarray,
                n_rules: int) -> np.ndarray:
    """Each rule's intercept given the tips' effects in ``theta``: a few one-dimensional Newton
    steps per rule, all rules at once (a warm start's tips with cold intercepts would send the
    first joint step far off)."""
    fixed = design @ np.concatenate([np.zeros(n_rules), theta[n_rules:]])
    alpha = np.zeros(n_rules)
    for _ in range(20):
        prob = 1 / (1 + np.exp(-np.clip(alpha[att_rule_col] + fixed, -30, 30)))
        gradient = np.bincount(att_rule_col, weights=target - prob, minlength=n_rules) - INTERCEPT_PENALTY * alpha
        curvature = np.bincount(att_rule_col, weights=np.maximum(prob * (1 - prob), 1e-9), minlength=n_rules)
        step = np.clip(gradient / (curvature + INTERCEPT_PENALTY), -5, 5)
        alpha += step
        if np.max(np.abs(step)) < 1e-8:
            break
    return alpha


def _information(design: sparse.csr_matrix, design_t: sparse.csr_matrix, entry_row: np.ndarray, weight: np.ndarray,
                 penalty: np.ndarray) -> sparse.csr_matrix:
    """X' W X + P: the rows of X scaled by their weights, one sparse product."""
    scaled = sparse.csr_matrix((design.data * weight[entry_row], design.indices, design.indptr), shape=design.shape)
    information = (design_t @ scaled).tocsr()
    information.setdiag(information.diagonal() + penalty)
    return information


def _block_columns(order: np.ndarray, block_of: np.ndarray, block_size: np.ndarray, starts: np.ndarray):
    """Per block, its columns in local order: a [blocks, largest block] matrix padded with -1."""
    width = int(block_size.max())
    matrix = np.full((block_size.size, width), -1, dtype=np.int64)
    sorted_blocks = block_of[order]
    position = np.arange(order.size) - starts[sorted_blocks]
    matrix[sorted_blocks, position] = order
    return matrix


def _conjugate_gradient(matrix: sparse.csr_matrix, rhs: np.ndarray, inverses, block_columns: np.ndarray,
                        tolerance: float = 1e-12, max_steps: int = 500) -> np.ndarray:
    def precondition(vector: np.ndarray) -> np.ndarray:
        out = np.empty_like(vector)
        for members, inverse in inverses:
            cols = block_columns[members, : inverse.shape[1]]
            out[cols] = np.einsum("bij,bj->bi", inverse, vector[cols])
        return out

    x = np.zeros_like(rhs)
    r = np.array(rhs)
    z = precondition(r)
    d = np.array(z)
    rz = r @ z
    goal = tolerance * max(np.sqrt(rhs @ rhs), 1e-300)
    for _ in range(max_steps):
        if np.sqrt(r @ r) <= goal:
            break
        md = matrix @ d
        alpha = rz / (d @ md)
        x += alpha * d
        r -= alpha * md
        z = precondition(r)
        rz_next = r @ z
        d = z + (rz_next / rz) * d
        rz = rz_next
    return x
