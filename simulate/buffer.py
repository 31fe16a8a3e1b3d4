"""The buffer of MODEL.md §10: completed groups waiting in FIFO order (by completion), and the batch
boundaries they decide. A batch takes whole groups, the fewest in completion order whose effective members
reach the batch size; under ``drop`` a group launched before the boundary K + 1 batches back is dropped
when its turn comes. Boundary j is ``max(b_{j-1} + U, completion of the group that fills it)``, or MODEL
§13's when failures are injected (:meth:`simulate.failures.Injection.batch_taken`).
"""

from __future__ import annotations

import math

import numpy as np

from trainground.simulation.failures import Injection
from trainground.simulation.setup import Setup


class Buffer:
    """Completed groups waiting in FIFO order (by completion), and the boundaries they decide."""

    def __init__(
        self, setup: Setup, inject: Injection | None = None, spacing: np.ndarray | None = None, record: bool = True
    ):
        """``spacing``: the update before each boundary j (a staged replay's, :mod:`simulate.stages`); None: U.
        ``record``: keep which groups each batch consumed and dropped (``gid``, ``consumed``, ``dropped``);
        without it they stay empty."""
        self.setup = setup
        self.inject = inject
        self.spacing = spacing
        self.record = record
        self.comp = np.empty(0)
        self.launch = np.empty(0)
        self.eff = np.empty(0, dtype=np.int64)
        self.gid = np.empty(0, dtype=np.int64)
        self.boundaries: list[float] = []
        self.consumed: list[tuple[np.ndarray, int]] = []
        self.dropped: list[tuple[np.ndarray, int]] = []

    def add(self, comp, launch, eff, gid) -> None:
        """Merge a window's groups (``gid`` increasing, above every buffered one) into the buffer's
        (completion, group id) order: the new groups sorted by completion (stable: ties by id), each placed
        after the buffered groups that complete no later."""
        order = _stable_order(comp)
        columns = {"comp": comp, "launch": launch, "eff": eff}
        if self.record:
            columns["gid"] = gid
        if not self.comp.size:
            for name, new in columns.items():
                setattr(self, name, new[order])
            return
        # Buffered then new, each sorted: a stable sort (timsort) merges the two runs in one linear pass and
        # keeps a buffered group ahead of a new one that completes at the same time.
        merged = np.argsort(np.concatenate((self.comp, comp[order])), kind="stable")
        for name, new in columns.items():
            setattr(self, name, np.concatenate((getattr(self, name), new[order]))[merged])

    def place(self, known: float) -> None:
        """Form every batch decided by groups completed by ``known`` (all such groups are in)."""
        end = int(np.searchsorted(self.comp, known, side="right"))  # the groups completed by ``known``
        while len(self.boundaries) < self.setup.iterations:
            taken = self._place_one(end)
            if not taken:
                return
            end -= taken

    def _place_one(self, end: int) -> int:
        """Form batch j from the groups completed so far (the first ``end``): the fewest groups, in completion
        order, whose eligible (launched at or after the boundary K + 1 batches back, under ``drop``)
        effective members reach the batch size. Returns the groups taken (eligible or dropped), 0 if none."""
        s = self.setup
        need = 2 * s.batch // max(1, s.group_size) + 64
        j = len(self.boundaries)
        old = j - s.versions_kept - 1
        floor = self.boundaries[old] if s.policy == "drop" and old >= 0 else -math.inf
        look = min(end, need)
        while True:
            eligible = self.launch[:look] >= floor
            total = np.cumsum(self.eff[:look] if floor == -math.inf else np.where(eligible, self.eff[:look], 0))
            e = int(np.searchsorted(total, s.batch, side="left"))
            if e < look or look == end:
                break
            look = min(end, 2 * look)
        if e >= look:
            return 0
        if self.inject is None:
            b = float(self.comp[e]) if j == 0 else max(self.boundaries[-1] + self._update(j), float(self.comp[e]))
        else:
            b = self.inject.batch_taken(float(self.comp[e]), s.update_s)
        self.boundaries.append(b)
        if self.record:
            taken = eligible[: e + 1]
            self.consumed.append((self.gid[: e + 1][taken], j))
            self.dropped.append((self.gid[: e + 1][~taken], j))
            self.gid = self.gid[e + 1 :]
        self.comp, self.launch, self.eff = self.comp[e + 1 :], self.launch[e + 1 :], self.eff[e + 1 :]
        return e + 1

    def _update(self, j: int) -> float:
        """The update before boundary j: U, or a staged replay's own."""
        return self.setup.update_s if self.spacing is None else float(self.spacing[j])


def _stable_order(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` (ties in index order), about twice as fast on a window's
    completions: numpy's radix sort on 16-bit buckets of the values, then its stable sort (timsort for
    floats) of the values in bucket order, which are then nearly sorted: equal values share a bucket, so
    the radix pass keeps them in index order and the second, stable pass leaves them so."""
    lo, hi = (float(values.min()), float(values.max())) if values.size else (0.0, 0.0)
    scale = 65000 / (hi - lo) if lo < hi else math.inf  # below 2**16 - 1 with room for rounding
    if values.size < 2 or not math.isfinite(scale) or not math.isfinite(hi - lo):
        return np.argsort(values, kind="stable")
    key = np.subtract(values, lo)
    key *= scale
    coarse = np.argsort(key.astype(np.uint16), kind="stable")
    return coarse[np.argsort(values[coarse], kind="stable")]
