"""Gold labels against the two legs: which retrievals a person marked followed, and how the judge
and the embedding agree with them (the figures come from ctxgraph.follow_label_metrics).

A labels file is CSV with a header and a ``followed`` column (true/false, yes/no, 1/0) and one way
to name the retrieval: ``retrieval_id``; or ``run_id, rule_id, attempt_number`` plus the tip as
``tip_id``, ``tip_body`` or ``tip_ref`` (with a tips.jsonl that maps tip_ref to its text).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import psycopg

import numpy as np

from ctxgraph.follow_signal import calibration as cal
from ctxgraph import jsontext
from ctxgraph.client import Client
from ctxgraph.connection_store import require_skill
from ctxgraph.follow_signal import SIGNAL_VERSION
from ctxgraph.scoring_store import Store

__all__ = ["CalibrationResult", "Evaluation", "LabelError", "calibrate", "evaluate_labels", "read_labels"]

TRUE = {"true", "t", "yes", "y", "1", "followed"}
FALSE = {"false", "f", "no", "n", "0", "ignored"}


class LabelError(ValueError):
    """A labels file that cannot be read; the message names the file and line."""


@dataclass
class Evaluation:
    labels: int
    matched: int
    unmatched: list[str]
    columns: list[str]
    rows: list[tuple]
    signal: dict | None = None


def read_labels(path: Path, tips_path: Path | None = None) -> list[dict]:
    """Return the label rows, each with 'followed' (bool) and the keys that name its retrieval."""
    bodies: dict[str, str] = {}
    if tips_path is not None:
        for number, raw in enumerate(tips_path.read_text(encoding="utf-8").splitlines(), start=1):
            if raw.strip():
                try:
                    item = jsontext.loads(raw)
                    bodies[item["tip_ref"]] = item["body"]
                except (ValueError, KeyError, TypeError) as exc:
                    raise LabelError(f"{tips_path}:{number}: not a tip line ({exc})") from exc
    try:
        return _label_rows(path, bodies)
    except UnicodeDecodeError as exc:
        raise LabelError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except csv.Error as exc:
        raise LabelError(f"{path}: not a CSV file ({exc})") from exc


def _label_rows(path: Path, bodies: dict[str, str]) -> list[dict]:
    # utf-8-sig: a spreadsheet's byte-order mark is not part of the first column's name.
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        fields = set(reader.fieldnames or [])
        if "followed" not in fields:
            raise LabelError(f"{path}: no 'followed' column")
        by_attempt = {"run_id", "rule_id", "attempt_number"} <= fields
        if "retrieval_id" not in fields and not (by_attempt and fields & {"tip_id", "tip_body", "tip_ref"}):
            raise LabelError(f"{path}: name retrievals by retrieval_id, or by run_id, rule_id, attempt_number "
                             "and tip_id / tip_body / tip_ref")
        if "retrieval_id" not in fields and "tip_ref" in fields and not fields & {"tip_id", "tip_body"} and not bodies:
            raise LabelError(f"{path}: labels name tips by tip_ref; pass the tips file (--tips) to resolve them")
        rows = []
        for line, row in enumerate(reader, start=2):
            value = (row.get("followed") or "").strip().lower()
            if value not in TRUE | FALSE:
                raise LabelError(f"{path}:{line}: followed must be true or false, got {row.get('followed')!r}")
            label = {"line": line, "followed": value in TRUE}
            if row.get("retrieval_id"):
                label["retrieval_id"] = int(row["retrieval_id"])
            else:
                try:
                    label.update(run_id=row["run_id"], rule_id=row["rule_id"],
                                 attempt_number=int(row["attempt_number"]))
                except (KeyError, ValueError) as exc:
                    raise LabelError(f"{path}:{line}: bad run_id / rule_id / attempt_number") from exc
                if row.get("tip_id"):
                    label["tip_id"] = int(row["tip_id"])
                elif row.get("tip_body"):
                    label["tip_body"] = row["tip_body"]
                elif row.get("tip_ref") in bodies:
                    label["tip_body"] = bodies[row["tip_ref"]]
                else:
                    raise LabelError(f"{path}:{line}: tip_ref {row.get('tip_ref')!r} is not in the tips file")
            rows.append(label)
    return rows


def evaluate_labels(conn: psycopg.Connection, skill: str, labels: list[dict]) -> Evaluation:
    """Resolve labels to retrieval ids and return follow_label_metrics for them (nothing is written)."""
    require_skill(conn, skill)
    by_line: dict[int, list[int]] = {}
    for line, retrieval_id in Store(conn).resolve_labels(skill, labels):
        by_line.setdefault(line, []).append(retrieval_id)
    ids: list[int] = []
    gold: list[bool] = []
    unmatched = []
    for label in labels:
        matches = by_line.get(label["line"], [])
        if not matches:
            unmatched.append(f"line {label['line']}")
        for retrieval_id in matches:
            ids.append(retrieval_id)
            gold.append(label["followed"])
    metrics = Client(conn).follow_label_metrics(skill, ids, gold)
    signal = _signal_row(conn, skill, ids, gold)
    conn.rollback()
    columns = list(metrics[0]) if metrics else []
    rows = [tuple(row.values()) for row in metrics]
    return Evaluation(len(labels), len(ids), unmatched, columns, rows, signal)


def _signal_row(conn: psycopg.Connection, skill: str, ids: list[int], gold: list[bool]) -> dict | None:
    """The follow signal's leg against the same labels: the stored probabilities' AUC and accuracy at 0.5."""
    probabilities = {r["retrieval_id"]: r["follow_probability"] for r in Client(conn).scored_retrievals(skill)
                     if r["follow_probability"] is not None}
    pairs = [(probabilities[i], g) for i, g in zip(ids, gold, strict=True) if i in probabilities]
    if not pairs:
        return None
    scores, labels = [p for p, _ in pairs], [g for _, g in pairs]
    return {"leg": "signal (follow_probability)", "labels": len(pairs),
            "accuracy": float(np.mean([(p >= 0.5) == g for p, g in pairs])), "roc_auc": cal.auc(scores, labels)}


@dataclass
class CalibrationResult:
    calibration: cal.Calibration
    saved: bool
    judged_share_expected: float

    def render(self) -> str:
        c = self.calibration
        f = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
        lines = [
            f"ctxgraph calibrate: {c.examples} examples ({c.positives} followed), fitted on {c.fitted_on}: {c.source}",
            f"  cross-validated by rule ({c.cv_folds} folds): ROC AUC {f(c.cv_auc)}, accuracy {f(c.cv_accuracy)}",
            f"  {c.describe()}",
        ]
        if c.cascade_low is not None:
            lines.append(f"  cascade band [{c.cascade_low:.3f}, {c.cascade_high:.3f}] for at most "
                         f"{c.cascade_max_disagreement:.1%} disagreement with the labels: the judge would be asked "
                         f"for about {self.judged_share_expected:.0%} of retrievals")
        lines.append(f"  stored as calibration {c.calibration_id}" if self.saved else "  not stored (--dry-run)")
        return "\n".join(lines)


def calibrate(conn: psycopg.Connection, skill: str, labels: list[dict] | None = None, *, folds: int = 5,
              max_disagreement: float = 0.03, ridge: float = 1.0, source: str | None = None,
              save: bool = True, from_default: bool = True,
              min_per_class: int = cal.MIN_PER_CLASS) -> CalibrationResult:
    """Fit the follow signal's calibration on the judge's verdicts (labels None) or on gold labels.

    Examples are the skill's retrievals whose stored follow evidence has the current signal version
    (a scoring pass writes it). The ridge pulls the coefficients toward the default calibration's
    (cal.DEFAULT, the fit on the labelled pool), so a skill's few hundred verdicts adjust it rather
    than start from nothing; from_default=False pulls them toward zero instead. Figures are
    cross-validated by rule, each fold fitted the same way; the cascade band comes from the
    out-of-fold predictions. Raises LabelError, having stored nothing (save=False is refused the
    same), when fewer than min_per_class examples are followed or ignored, or when cross-validation
    by rule gives no AUC and accuracy (examples on one rule, or each class confined to one fold)."""
    if min_per_class < 1:
        raise ValueError(f"min_per_class must be 1 or more, got {min_per_class}")
    require_skill(conn, skill)
    store = Store(conn)
    if labels is None:
        examples = [(rid, rule, tip, feats, cos, verdict) for rid, rule, tip, feats, cos, verdict
                    in store.signal_examples(skill, SIGNAL_VERSION) if verdict is not None]
        fitted_on = "judge"
        source = source or f"judge verdicts stored on skill {skill}"
    else:
        by_line = {}
        for line, rid in store.resolve_labels(skill, labels):
            by_line.setdefault(line, []).append(rid)
        gold = {rid: label["followed"] for label in labels for rid in by_line.get(label["line"], [])}
        examples = [(rid, rule, tip, feats, cos, gold[rid]) for rid, rule, tip, feats, cos, _
                    in store.signal_examples(skill, SIGNAL_VERSION, sorted(gold))]
        fitted_on = "labels"
        source = source or "gold labels"
    followed = sum(bool(e[5]) for e in examples)
    ignored = len(examples) - followed
    if min(followed, ignored) < min_per_class:
        what = "judge verdicts" if labels is None else "labels"
        raise LabelError(f"too few {what} to calibrate on: {followed} followed and {ignored} ignored among the "
                         f"scored retrievals with {SIGNAL_VERSION} evidence, and at least {min_per_class} of each "
                         "are needed (--min-per-class)" + ("; run ctxgraph score first" if not examples else ""))
    # Each example against the tip's other scored scripts, as the pass contrasts them.
    peer_totals = store.peer_feature_sums(skill, SIGNAL_VERSION, sorted({e[2] for e in examples}), cal.PEER_FEATURES)
    x = np.array([cal.design_row(feats, cos, cal.PeerSums(*peer_totals[tip]).minus(feats))
                  for _, _, tip, feats, cos, _ in examples])
    y = np.array([bool(e[5]) for e in examples], dtype=float)
    groups = [e[1] for e in examples]
    # The default's coefficients as the prior only where they are for these very features.
    prior = cal.DEFAULT.coefficients if from_default and cal.DEFAULT.feature_names == cal.feature_names() else None
    if prior is not None:
        source += "; from the default calibration"
    names = cal.feature_names()
    predictions, folds_used = cal.cross_validate(x, y, groups, folds, ridge, prior=prior, names=names)
    known = ~np.isnan(predictions)
    cv_auc = cal.auc(predictions[known].tolist(), y[known].astype(bool).tolist())
    cv_accuracy = float(np.mean((predictions[known] >= 0.5) == y[known].astype(bool))) if known.any() else None
    if cv_auc is None or cv_accuracy is None:
        # The figure is the only evidence the fit beats the calibration it would replace.
        rules, scored = len(set(groups)), int(known.sum())
        detail = "none" if not scored else f"{scored}, all {'followed' if y[known].all() else 'ignored'}"
        raise LabelError(f"no cross-validated figure, so nothing is stored: of the {len(examples)} examples on "
                         f"{rules} rule{'' if rules == 1 else 's'}, cross-validation by rule scored {detail} (a fold "
                         "is scored by a fit on both classes from the other rules); spread each class over more rules")
    low, high = cal.cascade_band(predictions[known].tolist(), y[known].astype(bool).tolist(), max_disagreement)
    inside = float(np.mean((predictions[known] >= low) & (predictions[known] <= high))) if known.any() else 1.0
    coefficients, intercept = cal.fit(x, y, ridge, prior=prior, names=names)
    result = cal.Calibration(
        feature_names=cal.feature_names(), coefficients=tuple(float(c) for c in coefficients), intercept=intercept,
        fitted_on=fitted_on, source=source, examples=len(examples), positives=int(y.sum()), cv_auc=cv_auc,
        cv_accuracy=cv_accuracy, cv_folds=folds_used, cascade_low=low, cascade_high=high,
        cascade_max_disagreement=max_disagreement)
    if save:
        result.calibration_id = Client(conn).save_follow_calibration(
            skill, result.signal_version, result.method, result.feature_names, result.coefficients,
            result.intercept, fitted_on, source, result.examples, result.positives, cv_auc, cv_accuracy,
            folds_used, low, high, max_disagreement)
    return CalibrationResult(result, save, inside)
