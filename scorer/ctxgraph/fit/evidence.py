"""The evidence a fit reads: a skill's scored retrievals as column arrays (:class:`Evidence`).

:func:`ctxgraph.fit.store.read_evidence` fills it from the database in one snapshot; the tests build
it by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

import numpy as np

from ctxgraph.fit.groups import Units, to_units

__all__ = ["SOURCE_CODES", "Evidence", "PreviousFit"]

# follow_source as a small integer: the blame model reads a verdict's reliability by its source.
SOURCE_CODES = {"none": 0, "judge": 1, "embedding": 2, "signal": 3}

@dataclass
class PreviousFit:
    """The stored fit an incremental fit starts from (``ctxgraph.fit_previous``), arrays on ``tip_id``.

    ``changed``: the tips whose evidence the stored fit has not seen (sorted); every other tip's
    rows are those it fitted.
    """

    as_of: datetime
    parameters: dict[str, float]  # the effects.* and blame.* parameters it read
    summary: dict  # the figures it fitted (tip_effects.parameters)
    tip_id: np.ndarray
    effect: np.ndarray  # NaN: no evidence
    std_error: np.ndarray
    method: np.ndarray
    misleading_probability: np.ndarray  # NaN: none
    changed: np.ndarray

    def lookup(self, values: np.ndarray, tips: np.ndarray, missing: float = np.nan) -> np.ndarray:
        """``values`` (aligned on ``tip_id``) for ``tips``; ``missing`` where the stored fit has no row."""
        if self.tip_id.size == 0:
            return np.full(tips.shape, missing)
        at = np.minimum(np.searchsorted(self.tip_id, tips), self.tip_id.size - 1)
        found = self.tip_id[at] == tips
        out = np.where(found, values[at], missing)
        return out

    def is_changed(self, tips: np.ndarray) -> np.ndarray:
        """Whether each tip's evidence changed since the stored fit, or the fit has no row for it."""
        if self.changed.size:
            at = np.minimum(np.searchsorted(self.changed, tips), self.changed.size - 1)
            changed = self.changed[at] == tips
        else:
            changed = np.zeros(tips.shape, dtype=bool)
        if self.tip_id.size == 0:
            return np.ones(tips.shape, dtype=bool)
        at = np.minimum(np.searchsorted(self.tip_id, tips), self.tip_id.size - 1)
        return changed | (self.tip_id[at] != tips)


@dataclass
class Evidence:
    """A skill's scored retrievals up to ``as_of``, as column arrays (one entry per row)."""

    skill: str
    as_of: datetime
    rules: list[str]  # rule code -> rule id, in the database's text order
    runs: list[str]
    tip_id: np.ndarray | None  # None once drop_row_keys let go of the row keys
    attempt_key: np.ndarray | None
    rule: np.ndarray
    run: np.ndarray
    follow_weight: np.ndarray
    credit: np.ndarray
    source: np.ndarray
    followed: np.ndarray
    follow_probability: np.ndarray
    cosine: np.ndarray
    harmful_attempts: np.ndarray  # sorted attempt keys that broke the system
    skill_tips: np.ndarray  # every tip of the skill, sorted
    evidence_version: Decimal
    parameters: dict[str, float]
    tip_versions: np.ndarray  # aligned with skill_tips
    previous: PreviousFit | None = None  # read only for an incremental fit
    _units: Units | None = field(default=None, repr=False)
    _attempts: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def units(self) -> Units:
        """The rows grouped by (tip, attempt), computed once for the effects and the blame."""
        if self._units is None:
            self._units = to_units(self.tip_id, self.attempt_key, self.rule)
        return self._units

    def attempts(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct attempt keys (sorted) and each row's index into them."""
        if self._attempts is None:
            keys, index = np.unique(self.attempt_key, return_inverse=True)
            # Positions into the keys only ever index or count: 4 bytes each where they fit.
            index = index.reshape(-1)
            self._attempts = (keys, index.astype(np.int32) if keys.size < np.iinfo(np.int32).max else index)
        return self._attempts

    def drop_row_keys(self) -> None:
        """Group the rows now (:meth:`units`, :meth:`attempts`) and let go of their tip and attempt
        keys, which no fit reads once they are grouped (at 10M rows they hold 160 MB)."""
        self.units()
        self.attempts()
        self.tip_id = self.attempt_key = None

    @property
    def rows(self) -> int:
        return int(self.credit.shape[0])

    def harmful(self, attempt_keys: np.ndarray) -> np.ndarray:
        """Whether each attempt key broke the system."""
        if self.harmful_attempts.size == 0:
            return np.zeros(attempt_keys.shape, dtype=bool)
        at = np.searchsorted(self.harmful_attempts, attempt_keys)
        at = np.minimum(at, self.harmful_attempts.size - 1)
        return self.harmful_attempts[at] == attempt_keys
