"""A fitted figure: its value, its bootstrap 90 % interval, the rows behind it, where it comes from."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

LEVEL = 0.90  # every interval is a 90 % bootstrap percentile interval
Z_LEVEL = 1.6448536269514722  # standard normal quantile at 0.95 (two-sided 90 %)


@dataclass(frozen=True)
class Figure:
    name: str
    value: float
    low: float | None
    high: float | None
    rows: int
    unit: str
    source: str  # the log (and column) it was read from
    note: str = ""
    spread: float | None = None  # relative sd of the figure from one part of the run to the next, when measured
    every: float | None = None  # a save or a validation pass: steps from one to the next (the median), when known

    def to_json(self) -> dict:
        return {
            "value": _num(self.value),
            "interval": [_num(self.low), _num(self.high)],
            "rows": self.rows,
            "unit": self.unit,
            "source": self.source,
            "note": self.note or None,
            "spread": _num(self.spread),
        }

    @property
    def relative_sd(self) -> float:
        """Half the interval's width over Z_LEVEL, relative to the value: the sd a normal factor would have."""
        if self.low is None or self.high is None or not self.value:
            return 0.0
        return (self.high - self.low) / (2 * Z_LEVEL * abs(self.value))

    @property
    def log_sd(self) -> float:
        """The interval's half-width in logs over Z_LEVEL: the sigma a lognormal factor would have."""
        if self.low is None or self.high is None or self.low <= 0 or self.high <= 0:
            return 0.0
        return math.log(self.high / self.low) / (2 * Z_LEVEL)


def resample(rng: np.random.Generator, size: int, replicates: int) -> np.ndarray:
    """(replicates, size): how often each of ``size`` units is drawn in each bootstrap resample."""
    idx = rng.integers(0, size, (replicates, size)) + (np.arange(replicates) * size)[:, None]
    return np.bincount(idx.ravel(), minlength=replicates * size).reshape(replicates, size).astype(float)


def percentile_interval(draws: np.ndarray) -> tuple[float, float]:
    tail = 100 * (1 - LEVEL) / 2
    lo, hi = np.percentile(draws, [tail, 100 - tail])
    return float(lo), float(hi)


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


@dataclass
class LoggedRun:
    """The logged run's own figures (each None when the log does not hold it), written beside the fitted ones."""

    slowest: Figure | None  # the generation phase, taken as a batch's slowest attempt (None: a fitted law is kept)
    tokens_per_attempt: Figure | None = None
    batch: Figure | None = None  # responses per step
