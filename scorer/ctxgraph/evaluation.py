"""Gold labels against the two legs: which retrievals a person marked followed, and how the judge
and the embedding agree with them (the figures come from ctxgraph.follow_label_metrics).

A labels file is CSV with a header and a ``followed`` column (true/false, yes/no, 1/0) and one way
to name the retrieval: ``retrieval_id``; or ``run_id, rule_id, attempt_number`` plus the tip as
``tip_id``, ``tip_body`` or ``tip_ref`` (with a tips.jsonl that maps tip_ref to its text).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

import psycopg

from ctxgraph.store import Client, Store, require_skill

__all__ = ["Evaluation", "LabelError", "evaluate_labels", "read_labels"]

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


def read_labels(path: Path, tips_path: Path | None = None) -> list[dict]:
    """Return the label rows, each with 'followed' (bool) and the keys that name its retrieval."""
    bodies: dict[str, str] = {}
    if tips_path is not None:
        for number, raw in enumerate(tips_path.read_text(encoding="utf-8").splitlines(), start=1):
            if raw.strip():
                try:
                    item = json.loads(raw)
                    bodies[item["tip_ref"]] = item["body"]
                except (ValueError, KeyError, TypeError) as exc:
                    raise LabelError(f"{tips_path}:{number}: not a tip line ({exc})") from exc
    with path.open(newline="", encoding="utf-8") as handle:
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
    conn.rollback()
    columns = list(metrics[0]) if metrics else []
    rows = [tuple(row.values()) for row in metrics]
    return Evaluation(len(labels), len(ids), unmatched, columns, rows)
