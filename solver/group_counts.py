"""The training-group counts of each (cadence, K) pair when start-up is counted (MODEL.md §8). No pyomo.

T = fill + (n-1)·L + U(m) + extra_time depends on the group count m through the last update U(m), so a pair
becomes one row per count worth having: from the fewest that keep up (U(m) <= L), while each more group
still shortens U(m), the pool-capacity bound still holds with the GPUs it takes, and T meets the deadline
(with §13's goodput, the trainer-paced part is divided by γ(m)). A question that only asks whether a plan
exists needs each pair's first such row alone (``Planner(fewest_groups=True)``), found here for all pairs at
once without listing the others, which with a long cadence grid and a large pool can run to 10^8 rows.
"""

from __future__ import annotations

import numpy as np

from trainground.models.instance import Instance
from trainground.solver import calculus as calc
from trainground.solver import goodput
from trainground.solver.tolerances import REL_TOL


def rows(
    inst: Instance,
    fewest: np.ndarray,
    cadence: np.ndarray,
    startup: np.ndarray,
    per_group: np.ndarray,
    spare_tokens: np.ndarray,
    rejected: dict[str, int],
    fewest_only: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pair of each row, its group count m, its makespan T), by pair then m, for pairs given by their fewest
    groups that keep up, cadence L, start-up fill, tokens/s one more group's GPUs would give inference
    (``per_group``) and best-shape supply beyond demand at the fewest groups (``spare_tokens``: the groups
    the pool can still give up are spare / per_group). A pair without a row counts once under "deadline" in
    ``rejected``. ``fewest_only``: each pair's first row alone."""
    if fewest_only and inst.reliability is None:
        return _first_rows(inst, fewest, cadence, startup, per_group, spare_tokens, rejected)
    t, w = inst.training, inst.workload
    lo, hi = calc.group_range(inst)
    counts = np.arange(lo, hi + 1)
    update = calc.update_time(t.update_time, counts * t.gpus_per_group)
    factor = goodput.progress(inst, counts)
    rows_at, rows_m, rows_span = [], [], []
    for i, (least, L, fill, rate, spare) in enumerate(
        zip(fewest.tolist(), cadence.tolist(), startup.tolist(), per_group.tolist(), spare_tokens.tolist())
    ):
        extra = np.inf if rate == 0 else spare / rate  # groups the pool could still give up
        options = counts[(counts >= least) & (counts <= least + extra * (1 + REL_TOL))]
        u = update[options - lo]
        best_before = np.minimum.accumulate(np.concatenate(([np.inf], u[:-1])))
        useful = np.isfinite(u) & (u <= L * (1 + REL_TOL)) & (u < best_before) & np.isfinite(factor[options - lo])
        trainer = (w.iterations - 1) * L + u[useful]
        if inst.reliability is not None:  # MODEL §13: the trainer-paced part divided by γ(m)
            trainer = trainer * factor[options - lo][useful]
        span = fill + trainer + inst.schedule.extra_time
        on_time = span <= inst.schedule.deadline * (1 + REL_TOL)
        if fewest_only:
            on_time &= np.cumsum(on_time) == 1
        rows_at += [i] * int(on_time.sum())
        rows_m += options[useful][on_time].tolist()
        rows_span += span[on_time].tolist()
        if not on_time.any():
            rejected["deadline"] = rejected.get("deadline", 0) + 1
    return np.array(rows_at, dtype=int), np.array(rows_m, dtype=int), np.array(rows_span, dtype=float)


def _first_rows(
    inst: Instance,
    fewest: np.ndarray,
    cadence: np.ndarray,
    startup: np.ndarray,
    per_group: np.ndarray,
    spare_tokens: np.ndarray,
    rejected: dict[str, int],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`rows` with ``fewest_only``, without §13, for all pairs at once: a pair's first row is its fewest
    count m within what the pool can give up with U(m) <= L and T <= deadline, i.e. U(m) at most a threshold
    of the pair's. Found by a bisection over the least U of the counts from the pair's fewest up (a sparse
    table of minima), so time and memory go with the pairs, not with pairs × counts."""
    t, w = inst.training, inst.workload
    lo, hi = calc.group_range(inst)
    update = calc.update_time(t.update_time, np.arange(lo, hi + 1) * t.gpus_per_group)
    update = np.where(np.isfinite(update), update, np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        extra = np.where(per_group == 0, np.inf, spare_tokens / np.where(per_group == 0, 1.0, per_group))
    first = fewest.astype(int) - lo  # index of the fewest count that keeps up
    top = np.floor(np.minimum(fewest + extra * (1 + REL_TOL), hi)).astype(int) - lo
    before_update = startup + (w.iterations - 1) * cadence + inst.schedule.extra_time
    # the threshold on U(m), a hair loose: the row found is then checked exactly as rows() checks it
    limit = np.minimum(cadence * (1 + REL_TOL), inst.schedule.deadline * (1 + REL_TOL) - before_update)
    limit = limit * (1 + REL_TOL) + REL_TOL
    least = RangeMin(update)
    live = (first >= 0) & (first <= top)
    live[live] = least(first[live], top[live]) <= limit[live]
    low, high = first.copy(), top.copy()
    while np.any(live & (low < high)):  # the first index whose least U from ``first`` meets the limit
        hit = live & (low < high)
        mid = (low + high) // 2
        reached = np.zeros(low.shape, dtype=bool)
        reached[hit] = least(first[hit], mid[hit]) <= limit[hit]
        high = np.where(hit & reached, mid, high)
        low = np.where(hit & ~reached, mid + 1, low)
    u = np.where(live, update[np.clip(low, 0, update.size - 1)], np.inf)
    span = startup + ((w.iterations - 1) * cadence + u) + inst.schedule.extra_time
    ok = live & (u <= cadence * (1 + REL_TOL)) & (span <= inst.schedule.deadline * (1 + REL_TOL))
    missed = int(np.count_nonzero(~ok))
    if missed:
        rejected["deadline"] = rejected.get("deadline", 0) + missed
    return np.flatnonzero(ok), (low[ok] + lo).astype(int), span[ok]


class RangeMin:
    """The least of ``values[a..b]`` (both ends included) for arrays of ``a`` and ``b``: a sparse table of the
    minima of runs of 1, 2, 4, ... values, two look-ups a query."""

    def __init__(self, values: np.ndarray):
        self.levels = [values]
        width = 1
        while 2 * width <= values.size:
            prev = self.levels[-1]
            self.levels.append(np.minimum(prev[: prev.size - width], prev[width:]))
            width *= 2

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        level = np.floor(np.log2(b - a + 1)).astype(int)
        out = np.empty(a.shape)
        for j in np.unique(level).tolist():
            sel = level == j
            row = self.levels[j]
            out[sel] = np.minimum(row[a[sel]], row[b[sel] - (1 << j) + 1])
        return out
