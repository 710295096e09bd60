"""Calibrating the follow signal: one small logistic model from the lexical features and the cosine.

A pure leaf module (numpy only). :func:`fit` fits ``P(followed) = sigmoid(intercept + w . x)`` on
labelled examples (judge verdicts or gold labels) by penalised maximum likelihood, and
:func:`cross_validate` scores that procedure on folds grouped by rule, so no rule is ever scored by
a model that saw its labels. :data:`DEFAULT` is the calibration the pass uses before any has been
fitted for a skill: fitted on the STIG sample's gold labels (``samples/stig/gold_labels.csv``) and
the hand-labelled pairs under ``tests/data`` but one held-out set, its cross-validated figures in
docs/run-log.md.

:func:`cascade_band` picks the probability band inside which the judge is still asked: outside
it, the calibrated probability decides, and the band is the one that leaves the most rows outside
it (saves the most judge calls) while its disagreement with the judge, on the cross-validated
predictions, stays under a set rate.
:class:`CascadeCheck` tests that promise on the run being scored: the judge is still asked for a
fixed share of the rows outside the band, and once those answers show, with 95% confidence, more
disagreement than the band allows, the cascade stops and the judge is asked everywhere. A band
fitted on other scripts (the default, or another skill's) then costs judge calls, not verdicts.

**Peer contrast.** Scripts for one rule share its topic, files and commands, so a tip's absolute
match is high on every one of them, followed or not. What separates the script that followed it
is that it matches the tip *more than the tip's other scripts do*: the ``peer_*`` features are a
script's :data:`PEER_FEATURES` minus their mean over the tip's other scored scripts
(:class:`PeerSums`; the tip's scripts for any rule, which on the gold labels did better than the
same rule's only: CV AUC 0.935 against 0.919), and ``no_peers`` marks a tip with none yet (the
contrast is then 0 and the absolute features decide alone). A calibration is evaluated by the
names it was fitted with (:meth:`Calibration.probability_of`), so one stored before the peer
features existed keeps scoring as it did.

**What a calibration needs to be stored.** At least :data:`MIN_PER_CLASS` examples of each class,
and a cross-validated AUC and accuracy (out-of-fold predictions from :func:`cross_validate` for
examples of both classes): without them nothing says the fit is better than the calibration it
would replace, so ``ctxgraph calibrate`` refuses it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ctxgraph.follow_signal import FEATURE_NAMES, SIGNAL_VERSION

__all__ = [
    "COSINE_FEATURE",
    "MIN_PER_CLASS",
    "PEER_FEATURES",
    "CascadeCheck",
    "PeerSums",
    "Calibration",
    "DEFAULT",
    "auc",
    "cascade_band",
    "cross_validate",
    "design_values",
    "feature_names",
    "fit",
    "peer_sums",
]

COSINE_FEATURE = "cosine_fallback"
# Where neither the parse nor the item search finds anything of the tip in the script, the signal
# knows nothing of direction: its features are set to 0 there and the probability is the cosine's,
# through these two terms (an indicator and the cosine on those rows only). Elsewhere the cosine
# does not enter: on the labelled sets, whose ignored scripts share their tip's topic, it carried
# nothing (its coefficient was -0.08 when it entered everywhere).
NOTHING_FEATURE = "nothing_to_compare"
# The lexical findings that count as something to compare (beside the parse's ``comparable``).
_FOUND_FEATURES: tuple[str, ...] = ("prescribed_best", "prescribed_share", "warned_share", "value_conflict",
                                    "order_broken")
# A cosine the embedding leg could not compute enters as this value (about the middle of the
# observed range) together with the indicator cosine_missing, so the coefficients stay honest.
COSINE_MISSING_VALUE = 0.5


# The lexical features whose contrast with the tip's other scripts enters the model.
# Chosen on the STIG sample's gold labels (cross-validated by rule: AUC 0.893 without, 0.935 with);
# the cosine's contrast added nothing there and is left out.
PEER_FEATURES: tuple[str, ...] = ("prescribed_share", "prescribed_specific", "warned_share")
NO_PEERS_FEATURE = "no_peers"

# The fewest followed and the fewest ignored examples a calibration may be fitted on (ctxgraph
# calibrate --min-per-class). One of each stored a fit that took the STIG sample's accuracy against
# its gold labels from 0.835 to 0.669; see docs/run-log.md for the measurement behind 20.
MIN_PER_CLASS = 20


def feature_names() -> tuple[str, ...]:
    return (*FEATURE_NAMES, NOTHING_FEATURE, COSINE_FEATURE, "cosine_missing",
            *(f"peer_{n}" for n in PEER_FEATURES), NO_PEERS_FEATURE)


def nothing_to_compare(lexical: dict[str, float]) -> bool:
    """Whether the signal found nothing of the tip in the script: no setting, file or command of it
    in the parse (``comparable``) and no item of it in the executable text."""
    return not lexical.get("comparable", 0.0) and not any(lexical.get(n, 0.0) for n in _FOUND_FEATURES)


@dataclass(frozen=True)
class PeerSums:
    """The tip's other scored scripts: how many, and the sum of each of :data:`PEER_FEATURES` over them."""

    count: int = 0
    sums: tuple[float, ...] = (0.0,) * len(PEER_FEATURES)

    def plus(self, lexical: dict[str, float]) -> PeerSums:
        return self._shifted(lexical, 1)

    def minus(self, lexical: dict[str, float]) -> PeerSums:
        """These sums without one script's own features (sums taken over every script, this one included)."""
        return self._shifted(lexical, -1)

    def _shifted(self, lexical: dict[str, float], sign: int) -> PeerSums:
        return PeerSums(self.count + sign,
                        tuple(s + sign * float(lexical[n]) for s, n in zip(self.sums, PEER_FEATURES, strict=True)))


def peer_sums(groups: Sequence[object], lexical: Sequence[dict[str, float]]) -> list[PeerSums]:
    """For examples keyed by group (their tip), each one's :class:`PeerSums` over the *other*
    examples of its group."""
    total: dict[object, PeerSums] = {}
    for g, lex in zip(groups, lexical, strict=True):
        total[g] = total.get(g, PeerSums()).plus(lex)
    return [total[g].minus(lex) for g, lex in zip(groups, lexical, strict=True)]


def design_values(lexical: dict[str, float], cosine: float | None,
                  peers: PeerSums | None = None) -> dict[str, float]:
    """One example's features by name (every name of :func:`feature_names`)."""
    missing = cosine is None or (isinstance(cosine, float) and math.isnan(cosine))
    nothing = nothing_to_compare(lexical)
    values = {name: 0.0 if nothing else float(lexical[name]) for name in FEATURE_NAMES}
    values[NOTHING_FEATURE] = 1.0 if nothing else 0.0
    values[COSINE_FEATURE] = (COSINE_MISSING_VALUE if missing else float(cosine)) if nothing else 0.0
    values["cosine_missing"] = 1.0 if missing and nothing else 0.0
    peers = peers if peers is not None and peers.count > 0 else None
    for i, name in enumerate(PEER_FEATURES):
        values[f"peer_{name}"] = float(lexical[name]) - peers.sums[i] / peers.count if peers else 0.0
    values[NO_PEERS_FEATURE] = 0.0 if peers else 1.0
    return values


def design_row(lexical: dict[str, float], cosine: float | None, peers: PeerSums | None = None) -> list[float]:
    """One example's feature vector in :func:`feature_names` order."""
    values = design_values(lexical, cosine, peers)
    return [values[name] for name in feature_names()]


@dataclass
class Calibration:
    """A fitted combination: what the pass evaluates per retrieval, and where it came from."""

    feature_names: tuple[str, ...]
    coefficients: tuple[float, ...]
    intercept: float
    signal_version: str = SIGNAL_VERSION
    method: str = "logistic"
    fitted_on: str = "labels"
    source: str = ""
    examples: int = 0
    positives: int = 0
    cv_auc: float | None = None
    cv_accuracy: float | None = None
    cv_folds: int | None = None
    cascade_low: float | None = None
    cascade_high: float | None = None
    cascade_max_disagreement: float | None = None
    calibration_id: int | None = None
    extras: dict = field(default_factory=dict)

    def probability(self, row: Sequence[float]) -> float:
        """The probability for a row in this calibration's own feature order."""
        z = self.intercept + sum(c * x for c, x in zip(self.coefficients, row, strict=True))
        return 1.0 / (1.0 + math.exp(-max(-35.0, min(35.0, z))))

    def probability_of(self, values: dict[str, float]) -> float:
        """The probability for features by name (:func:`design_values`): a calibration reads the
        names it was fitted with, so one fitted before a feature existed ignores it."""
        missing = [name for name in self.feature_names if name not in values]
        if missing:
            raise ValueError(f"calibration {self.label()} needs features this signal does not compute: "
                             f"{', '.join(missing)}")
        return self.probability([values[name] for name in self.feature_names])

    @classmethod
    def from_row(cls, row: dict) -> Calibration:
        """A calibration as ctxgraph.current_follow_calibration returns it."""
        return cls(
            feature_names=tuple(row["feature_names"]), coefficients=tuple(row["coefficients"]),
            intercept=row["intercept"], signal_version=row["signal_version"], method=row["method"],
            fitted_on=row["fitted_on"], source=row["source"], examples=row["examples"], positives=row["positives"],
            cv_auc=row["cv_auc"], cv_accuracy=row["cv_accuracy"], cv_folds=row["cv_folds"],
            cascade_low=row["cascade_low"], cascade_high=row["cascade_high"],
            cascade_max_disagreement=row["cascade_max_disagreement"], calibration_id=row["calibration_id"])

    def label(self) -> str:
        """How a summary names it: the stored calibration's id and source, or the default."""
        if self.calibration_id is None:
            return f"{self.signal_version}, default calibration"
        return f"{self.signal_version}, calibration {self.calibration_id} fitted on {self.fitted_on}"

    def band(self) -> tuple[float, float] | None:
        """The cascade band (the judge is asked inside it), or None when none was fitted."""
        if self.cascade_low is None or self.cascade_high is None:
            return None
        return self.cascade_low, self.cascade_high

    def describe(self) -> str:
        terms = " ".join(f"{c:+.3f}*{n}" for n, c in zip(self.feature_names, self.coefficients, strict=True))
        return f"logit p = {self.intercept:+.3f} {terms}"


def without_peers(x: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """The same design rows as if their tips had no other scored script: the peer contrasts 0 and
    ``no_peers`` 1, as a tip's first scripts are scored."""
    x = np.array(x, dtype=float, copy=True)
    for i, name in enumerate(names):
        if name.startswith("peer_"):
            x[:, i] = 0.0
        elif name == NO_PEERS_FEATURE:
            x[:, i] = 1.0
    return x


def fit(x: np.ndarray, y: np.ndarray, ridge: float = 1.0, iterations: int = 50,
        prior: Sequence[float] | None = None, names: Sequence[str] | None = None) -> tuple[np.ndarray, float]:
    """Penalised logistic regression by Newton steps; the intercept is not penalised.

    The ridge pulls the coefficients toward zero, or toward ``prior`` (coefficients of the same
    features, e.g. :data:`DEFAULT`'s): a skill's few hundred verdicts then adjust the labelled
    pool's fit instead of starting from nothing (docs/run-log.md, "Follow signal": `ctxgraph calibrate`).

    With ``names`` holding the peer features, every row is also fitted as its tip's first script
    would be scored (:func:`without_peers`): labelled sets give almost every tip several scripts, a
    pass does not, and a fit that never saw a row without peers scored those rows 0.05 AUC worse
    (pooled, each labelled set held out whole)."""
    if names is not None and NO_PEERS_FEATURE in names:
        x = np.vstack([x, without_peers(x, names)])
        y = np.concatenate([y, y])
    n, k = x.shape
    design = np.hstack([np.ones((n, 1)), x])
    beta = np.zeros(k + 1)
    target = np.zeros(k + 1)
    if prior is not None:
        if len(prior) != k:
            raise ValueError(f"a prior of {len(prior)} coefficients for {k} features")
        target[1:] = np.asarray(prior, dtype=float)
    penalty = np.full(k + 1, ridge)
    penalty[0] = 1e-6
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(design @ beta, -35, 35)))
        w = p * (1 - p)
        gradient = design.T @ (y - p) - penalty * (beta - target)
        hessian = design.T @ (design * w[:, None]) + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if np.max(np.abs(step)) < 1e-8:
            break
    return beta[1:], float(beta[0])


def auc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """ROC AUC (ties count one half); None without both classes."""
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return None
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    values = np.concatenate([pos, neg])[order]
    ranks = np.empty(len(values))
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[i]:
            j += 1
        ranks[i : j + 1] = (i + j) / 2 + 1
        i = j + 1
    rank_of = np.empty(len(values))
    rank_of[order] = ranks
    pos_ranks = rank_of[: len(pos)].sum()
    return float((pos_ranks - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def cross_validate(x: np.ndarray, y: np.ndarray, groups: Sequence[str], folds: int = 5,
                   ridge: float = 1.0, prior: Sequence[float] | None = None,
                   names: Sequence[str] | None = None) -> tuple[np.ndarray, int]:
    """Out-of-fold probabilities, folds made of whole groups (rules), each fold fitted as :func:`fit`
    with the same ridge and prior; returns (predictions, folds used)."""
    distinct = sorted(set(groups))
    folds = max(2, min(folds, len(distinct)))
    # Deterministic assignment: groups in sorted order dealt round-robin by size, largest first.
    sizes = {g: 0 for g in distinct}
    for g in groups:
        sizes[g] += 1
    fold_of: dict[str, int] = {}
    load = [0] * folds
    for g in sorted(distinct, key=lambda g: (-sizes[g], g)):
        target = min(range(folds), key=lambda f: (load[f], f))
        fold_of[g] = target
        load[target] += sizes[g]
    predictions = np.full(len(y), np.nan)
    index = np.array([fold_of[g] for g in groups])
    for f in range(folds):
        test = index == f
        train = ~test
        if test.sum() == 0 or len(set(y[train].tolist())) < 2:
            continue
        coef, intercept = fit(x[train], y[train], ridge, prior=prior, names=names)
        predictions[test] = 1.0 / (1.0 + np.exp(-np.clip(intercept + x[test] @ coef, -35, 35)))
    return predictions, folds


def cascade_band(probabilities: Sequence[float], labels: Sequence[bool],
                 max_disagreement: float) -> tuple[float, float]:
    """The band [low, high] around 0.5 that leaves the most examples outside it (the judge calls a
    cascade saves) while deciding every example outside it by the probability (>= 0.5 followed)
    disagrees with the labels on at most max_disagreement of all examples; among equals, the one
    with fewer disagreements, then the narrowest. Examples inside the band go to the judge and, by
    construction, agree with it.

    The ends are drawn from the examples' probabilities rounded to 4 places (and 0, 0.5, 1). Below
    the band, the count and the disagreements only grow as low rises; above it, they only shrink as
    high rises; so for each low the best high is the lowest one the remaining budget allows, found
    by bisection: O(n log n), for the thousands of verdicts a run's judge gives."""
    p = np.asarray(probabilities, dtype=float)
    truth = np.asarray(labels, dtype=bool)
    n = len(p)
    if n == 0:
        return 0.0, 1.0
    budget = math.floor(max_disagreement * n + 1e-9)
    candidates = np.array(sorted(set(np.round(p, 4).tolist()) | {0.0, 0.5, 1.0}))
    lows = candidates[candidates <= 0.5]
    highs = candidates[candidates >= 0.5]
    order = np.argsort(p, kind="stable")
    sorted_p, sorted_truth = p[order], truth[order]
    # Prefix counts over the ascending probabilities: rows below a low (p < low, decided not
    # followed, wrong where followed) and rows above a high (p > high, decided followed, wrong
    # where not).
    followed_before = np.concatenate(([0], np.cumsum(sorted_truth)))
    ignored_before = np.concatenate(([0], np.cumsum(~sorted_truth)))
    below = np.searchsorted(sorted_p, lows, side="left")
    below_wrong = followed_before[below]
    above_start = np.searchsorted(sorted_p, highs, side="right")
    above = n - above_start
    above_wrong = ignored_before[n] - ignored_before[above_start]
    # above_wrong does not rise with high: negate it for an ascending search.
    descending_wrong = -above_wrong
    best, best_key = (0.0, 1.0), None
    for i, low in enumerate(lows):
        left = budget - below_wrong[i]
        if left < 0:
            break
        j = int(np.searchsorted(descending_wrong, -left, side="left"))
        if j == len(highs):
            continue
        key = (int(below[i] + above[j]), -int(below_wrong[i] + above_wrong[j]), -(highs[j] - low))
        if best_key is None or key > best_key:
            best, best_key = (float(low), float(highs[j])), key
    return best


# The share of rows outside the band the judge is still asked about (ctxgraph score --cascade-check),
# the first rows outside it a pass always checks (a small run gets a real test too), and how many
# answers the check needs before it may stop the cascade.
CASCADE_CHECK_SHARE = 0.1
CASCADE_CHECK_FIRST = 20
CASCADE_CHECK_MIN = 10
_ONE_SIDED_95 = 1.6449


def _wilson_lower(successes: int, n: int, z: float) -> float:
    """The Wilson score lower bound, as ctxgraph.wilson_lower (deploy/function_wilson_bounds.sql)
    defines it: the cascade check runs in the pass and in the bench without a database."""
    if n == 0:
        return 0.0
    p = successes / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - spread) / (1 + z * z / n))


@dataclass
class CascadeCheck:
    """The cascade's test of its band on the scripts it is scoring.

    Every row with a probability is :meth:`counted`; a row outside the band is :meth:`selected` for a
    check (the judge is asked anyway) when it is among the pass's first ``first`` such rows, or when a
    hash of its question falls in ``share`` (so the same question is checked on every pass or never);
    a verdict already cached checks for free. Each
    :meth:`observe` compares the probability's decision (>= 0.5 followed) with the judge's verdict.
    The band promised at most ``max_disagreement`` of all rows decided against the judge: the
    check :attr:`stopped` once the one-sided 95% lower bound of the checked rows' disagreement,
    times the share of rows outside the band, exceeds that (and at least ``minimum`` rows were
    checked). From then on the pass asks the judge everywhere.

    The evidence of the skill's earlier runs (:meth:`add_earlier`, from ctxgraph.cascade_track_record)
    counts as checks made before the pass: the first checks are the skill's first, not every pass's,
    and a band whose record already breaks its promise is stopped before the pass decides a row."""

    max_disagreement: float
    share: float = CASCADE_CHECK_SHARE
    first: int = CASCADE_CHECK_FIRST
    minimum: int = CASCADE_CHECK_MIN
    rows: int = 0
    outside: int = 0
    checked: int = 0
    disagreed: int = 0
    stopped: bool = False
    selections: int = 0
    earlier_rows: int = 0
    earlier_outside: int = 0
    earlier_checked: int = 0
    earlier_disagreed: int = 0

    def add_earlier(self, questions: int, outside_band: int, checked: int, disagreed: int) -> None:
        """Start from the record of the skill's earlier runs (distinct questions, those outside the
        band, those of them the judge answered, those it disagreed on)."""
        self.earlier_rows, self.earlier_outside = questions, outside_band
        self.earlier_checked, self.earlier_disagreed = checked, disagreed
        self._decide()

    def counted(self, outside_band: bool) -> None:
        self.rows += 1
        self.outside += outside_band

    def selected(self, question: str) -> bool:
        """Whether a row outside the band is asked anyway: one of the first, or by a hash of its
        question (tip, script). A share of 0 switches the check off."""
        if self.share <= 0:
            return False
        bucket = int.from_bytes(hashlib.sha256(question.encode()).digest()[:4], "big") / 2**32
        chosen = self.earlier_checked + self.selections < self.first or bucket < self.share
        self.selections += chosen
        return chosen

    def observe(self, probability: float, followed: bool) -> None:
        self.checked += 1
        self.disagreed += (probability >= 0.5) != followed
        self._decide()

    def _decide(self) -> None:
        if self.checked + self.earlier_checked >= self.minimum and self.bound() > self.max_disagreement:
            self.stopped = True

    def bound(self) -> float:
        """The lower bound of the share of all rows the band decides against the judge, on this pass's
        checks and the earlier runs' together."""
        rows, outside = self.rows + self.earlier_rows, self.outside + self.earlier_outside
        outside_share = outside / rows if rows else 0.0
        return _wilson_lower(self.disagreed + self.earlier_disagreed, self.checked + self.earlier_checked,
                             _ONE_SIDED_95) * outside_share

    def describe(self) -> str:
        rate = f"{self.disagreed / self.checked:.0%}" if self.checked else "-"
        text = (f"{self.checked} rows outside the band checked with the judge, the signal disagreed on "
                f"{self.disagreed} ({rate})")
        if self.earlier_checked:
            text += (f"; the skill's earlier runs: {self.earlier_checked} checked, {self.earlier_disagreed} "
                     f"disagreed ({self.earlier_disagreed / self.earlier_checked:.0%})")
        return text


# The default, before a skill has its own: the fit on the pool of labelled pairs in the repository
# but one set (bench/follow_signal_auc.py, DEFAULT_POOL): the STIG sample's 285 gold labels and the
# hand-labelled tests/data/follow_pairs.jsonl and holdout sets A, B, F to M and O to Q (1,237 labels,
# 653 followed; ridge 1.0; each label's peers the other labelled scripts of its tip, and each label also
# fitted without them (fit's names); the cosines of the float32 model, CTXGRAPH_EMBED_RUNTIME=torch),
# with the figures of
# the same procedure cross-validated by fold groups of whole rules or tips (5 folds) and its cascade
# band for 3% disagreement on those out-of-fold predictions. Set N stays out: it measures the default
# on labels it never saw. Each set scored by the fit on every other set did better than by the fit on
# the earlier pool of six (gold, follow_pairs, A, B, F, G) on 11 of 12 sets (docs/run-log.md).
# bench/follow_signal_auc.py prints them and tests/test_follow_signal.py refits and compares.
DEFAULT = Calibration(
    feature_names=feature_names(),
    coefficients=(1.1482, 2.7334, -1.4213, 0.3845, -0.7692, 0.4354, 0.0000, -1.3754, -3.9095, 2.3268,
                  0.2191, 0.7069, -1.0992, -0.2508, -1.7772, 0.3435, -0.0573,
                  -0.0879, 0.2557, 0.0000, 2.4115, 1.0254, -2.0545, -0.0579),
    intercept=-1.0277,
    fitted_on="labels",
    source=("default: samples/stig/gold_labels.csv + tests/data/follow_pairs.jsonl"
            " + holdout sets a, b, f to m, o to q"),
    examples=1237,
    positives=653,
    cv_auc=0.8998,
    cv_accuracy=0.8222,
    cv_folds=5,
    cascade_low=0.0709,
    cascade_high=0.8269,
    cascade_max_disagreement=0.03,
)
