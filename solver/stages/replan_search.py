"""The total-cost search on the replan model (:mod:`solver.stages.replan`): HiGHS runs over the stage pairs that can
hold the optimum, the others closed (their selection binaries bounded to 0).

Each stage pair has a floor, a valid lower bound on the total cost of any plan that selects it: its bill at its
cost bound (part·lo/3600) plus, over the other stages' pairs of its K whose parts fit in the room its own part
leaves (the deadline or cap, less the extra time and the shortest final update; no switch), the least sum of their
bills at their bounds: a min-plus convolution of each stage's (part, bill) Pareto front. The extra time, the final
update, the switches and every count above a bound only add cost, so no plan selecting a pair costs less than its
floor.

The runs open the pairs whose floor is within a target, from just above the least floor: a run whose optimum is
within its target has every pair that could beat it open, so it is the optimum of the whole model; otherwise the
target rises to the plan found and the run is repeated (a target that finds no plan grows fourfold from the least
floor, up to every pair). The tie-breaks of MODEL §4 then run from that plan over the pairs whose floor is within
the optimum's tie tolerance, which every plan they may choose selects. The plan is that of the whole model, in a fraction of its
runs' time: on the bundled staged seed re-planned 1,126 pairs become a few dozen.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from trainground.models.result import Status
from trainground.solver.highs import HighsModel
from trainground.solver.stages.replan import ReplanModel
from trainground.solver.stopwatch import Stopwatch
from trainground.solver.tolerances import TIE_TOL

PROBE = 0.005  # the first target: this share above the least floor
Runs = Callable[..., tuple]  # solver.stages.solve._lexicographic


def front(parts: np.ndarray, bills: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (part, bill) points no other beats on both, by part: bills strictly falling."""
    order = np.lexsort((bills, parts))
    parts, bills = parts[order], bills[order]
    best = np.minimum.accumulate(bills)
    keep = np.concatenate(([True], best[1:] < best[:-1])) if bills.size else np.zeros(0, dtype=bool)
    return parts[keep], best[keep]


def convolve(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The front of every sum of a point of ``a`` and a point of ``b``."""
    return front((a[0][:, None] + b[0][None, :]).ravel(), (a[1][:, None] + b[1][None, :]).ravel())


def least_within(points: tuple[np.ndarray, np.ndarray], room: np.ndarray) -> np.ndarray:
    """Per room, the least bill of a front point whose part fits in it (inf: none)."""
    parts, bills = points
    at = np.searchsorted(parts, room, side="right") - 1
    return np.where(at >= 0, bills[np.maximum(at, 0)] if bills.size else np.inf, np.inf)


def floors(r: ReplanModel, room: float) -> list[np.ndarray]:
    """Per stage, each pair's floor (module docstring), $; ``room``: the most T may be, s."""
    found, inst = r.c.found, r.inst
    shortest_final = float(np.min(found.final[1])) if found.final is not None and found.final[1].size else 0.0
    room -= inst.schedule.extra_time + shortest_final
    bills = [part * lo / 3600.0 for part, lo in zip(found.parts, r.lows)]
    out = [np.full(part.size, np.inf) for part in found.parts]
    for K in r.c.Ks:
        rows = [t.kept == K for t in found.tables]
        fronts = [front(part[at], bill[at]) for part, bill, at in zip(found.parts, bills, rows)]
        for p, at in enumerate(rows):
            others = (np.zeros(1), np.zeros(1))
            for q, f in enumerate(fronts):
                if q != p:
                    others = convolve(others, f)
            out[p][at] = bills[p][at] + least_within(others, room - found.parts[p][at])
    return out


class Openings:
    """Which stage pairs a run may select: the others' binaries bounded to 0, in the model and in HiGHS."""

    def __init__(self, r: ReplanModel, highs: HighsModel):
        self.r, self.highs = r, highs
        self.open = [np.ones(t.size, dtype=bool) for t in r.c.found.tables]

    def set(self, wanted: list[np.ndarray]) -> None:
        changed = []
        z = self.r.model.z
        for p, (now, want) in enumerate(zip(self.open, wanted)):
            for i in np.flatnonzero(now != want).tolist():
                z[p, i].setub(1 if want[i] else 0)
                changed.append(z[p, i])
            self.open[p] = want.copy()
        self.highs.bounds_changed(changed)

    def within(self, floors_: list[np.ndarray], target: float) -> bool:
        """Open the pairs whose floor is within ``target`` (and close the others); True when every pair is open."""
        wanted = [f <= target for f in floors_]
        self.set(wanted)
        return all(w.all() for w in wanted)


def search_total(r: ReplanModel, highs: HighsModel, clock: Stopwatch, runs: Runs, limits: list, room: float) -> tuple:
    """MODEL §4's order for total_cost on the replan model under ``limits`` (those of ``runs``), T within ``room``:
    (status, values, primary value, HiGHS seconds), as ``runs`` returns them."""
    floors_ = floors(r, room)
    finite = [f[np.isfinite(f)] for f in floors_]
    if not all(f.size for f in finite):  # a stage with no pair that fits: the whole model says so
        return runs(r, highs, "total_cost", clock, limits)
    least = min(float(f.min()) for f in finite)
    target = least * (1 + PROBE)
    openings = Openings(r, highs)
    try:
        while True:
            every = openings.within(floors_, target)
            clock.note(f"{r.inst.name}: HiGHS, total_cost over {sum(map(np.count_nonzero, openings.open)):,} pairs")
            status, values, value, seconds = runs(r, highs, "total_cost", clock, limits, ("total_cost",))
            if values is None and status == Status.INFEASIBLE and not every:
                # open more pairs: four times the room above the least floor (some room where that floor is 0)
                target = least + 4 * max(target - least, PROBE * max(abs(least), 1.0))
                continue
            if values is None or status != Status.OPTIMAL or value <= target:
                break
            target = value
        if values is None or status != Status.OPTIMAL:
            return status, values, value, seconds
        openings.within(floors_, value + TIE_TOL * max(1.0, abs(value)))  # what a tie may select
        return runs(r, highs, "total_cost", clock, limits, None, (values, value))
    finally:
        openings.set([np.ones(t.size, dtype=bool) for t in r.c.found.tables])
