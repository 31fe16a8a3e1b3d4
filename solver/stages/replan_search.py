"""The total-cost and hourly-cost searches on the replan model (:mod:`solver.stages.replan`): HiGHS runs over the
stage pairs that can hold the optimum, the others closed (their selection binaries bounded to 0).

Each stage pair has a floor, a valid lower bound on the total cost of any plan that selects it
(:mod:`solver.stages.replan_floors`): the bills at the pairs' cost bounds, over the other stages' pairs of its K that
fit in the room its own part leaves (min-plus convolutions of Pareto fronts), with the extra time, the shortest final
update and the switches each plan's switch pattern implies billed too.

The runs open the pairs whose floor is within a target, from PROBE above the least floor: a run whose optimum is
within its target has every pair that could beat it open, so it is the optimum of the whole model; otherwise the
target's room above the least floor grows fourfold, to no more than the plan found (which bounds the optimum), and
the run is repeated, up to every pair. The tie-breaks of MODEL §4 then run from that plan over the pairs whose floor
is within the optimum's tie tolerance, which every plan they may choose selects. The plan is that of the whole
model, in a fraction of its runs' time: on the staged week re-planned with an 8-day deadline (1,903 pairs) a
tie-break opens one pair per stage.

The hourly cost, the largest stage's, is searched the same way (:func:`search_hourly`): a pair's floor is its own
cost bound, and a pair that cannot fit in the room beside the other stages' pairs of its K within the target is closed
too; its targets start and grow as the total cost's do. A search may start from a lower bound on its optimum (a frontier's last point, found under a looser cap): the
start only chooses the first run's pairs, so the plan is the same from any start.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from trainground.models.result import Status
from trainground.solver.highs import HighsModel
from trainground.solver.stages.replan import ReplanModel
from trainground.solver.stages.replan_floors import Choices, PairFloors
from trainground.solver.stopwatch import Stopwatch
from trainground.solver.tolerances import TIE_TOL

PROBE = 1e-3  # the first target: this share above the least floor
Runs = Callable[..., tuple]  # solver.stages.solve._lexicographic


def floors(r: ReplanModel, room: float) -> list[np.ndarray]:
    """Per stage, each pair's floor (:mod:`solver.stages.replan_floors`), $; ``room``: the most T may be, s."""
    found = r.c.found
    tail, each = _floor_tables(r)
    out = [np.full(part.size, np.inf) for part in found.parts]
    for rows, tables in each:
        for p, values in enumerate(tables.at(room - tail)):
            out[p][rows[p]] = values
    return out


def _floor_tables(r: ReplanModel) -> tuple[float, list[tuple[list[np.ndarray], PairFloors]]]:
    """The tail billed at the last stage's rate (the extra time and the shortest final update, s) and, per K, its
    pairs' rows in each stage with their :class:`PairFloors`: found once per model."""
    if r.floor_tables is None:
        found, inst = r.c.found, r.inst
        assert inst.stages is not None
        tail = _tail(r)
        fixed = 0.0 if r.terms is None else r.fixed_rate  # without terms a block's rate is its pairs' largest lo
        each = []
        for K in r.c.Ks:
            rows = [np.flatnonzero(t.kept == K) for t in found.tables]
            members = [
                Choices(part[at], np.zeros((at.size, 3)) if r.terms is None else r.terms[p][at], lo[at])
                for p, (part, lo, at) in enumerate(zip(found.parts, r.lows, rows))
            ]
            each.append((rows, PairFloors(members, fixed, inst.stages.switch_time, tail)))
        r.floor_tables = (tail, each)
    return r.floor_tables


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


def _tail(r: ReplanModel) -> float:
    """What every plan's T holds besides its parts and switches, s: the extra time and the shortest final update
    (billed at the last stage's rate)."""
    final = r.c.found.final
    return r.inst.schedule.extra_time + (float(np.min(final[1])) if final is not None and final[1].size else 0.0)


def fitting(r: ReplanModel, wanted: list[np.ndarray], room: float) -> list[np.ndarray]:
    """``wanted`` less the pairs no plan within ``room`` can select among them: a pair stays while its part and the
    shortest part of each other stage's pairs of its K still wanted fit in the room (the extra time and the shortest
    final update set aside), until none leaves. Every plan of T within ``room`` whose pairs are all wanted keeps them."""
    found = r.c.found
    room -= _tail(r)
    kept = [w.copy() for w in wanted]
    while True:
        shortest = [
            {K: _least(part[k & (t.kept == K)]) for K in r.c.Ks} for part, t, k in zip(found.parts, found.tables, kept)
        ]
        total = {K: sum(s[K] for s in shortest) for K in r.c.Ks}
        now = []
        for p, (part, t, k) in enumerate(zip(found.parts, found.tables, kept)):
            others = np.array([total[int(K)] - shortest[p][int(K)] for K in t.kept]) if t.size else np.zeros(0)
            now.append(k & (part + others <= room))
        if all((a == b).all() for a, b in zip(now, kept)):
            return kept
        kept = now


def _least(values: np.ndarray) -> float:
    return float(values.min()) if values.size else np.inf


def search_total(
    r: ReplanModel, highs: HighsModel, clock: Stopwatch, runs: Runs, limits: list, room: float, start: float | None
) -> tuple:
    """MODEL §4's order for total_cost on the replan model under ``limits`` (those of ``runs``), T within ``room``:
    (status, values, primary value, HiGHS seconds), as ``runs`` returns them. ``start``: a lower bound on the
    optimum (a looser cap's), where the targets begin; it only steers which pairs the first run opens."""
    floors_ = floors(r, room)
    finite = [f[np.isfinite(f)] for f in floors_]
    if not all(f.size for f in finite):  # a stage with no pair that fits: the whole model says so
        return runs(r, highs, "total_cost", clock, limits)
    least, most = min(float(f.min()) for f in finite), max(float(f.max()) for f in finite)
    return _search(
        r, highs, clock, runs, limits, "total_cost", lambda target: [f <= target for f in floors_], (least, most), start
    )


def search_hourly(
    r: ReplanModel, highs: HighsModel, clock: Stopwatch, runs: Runs, limits: list, room: float, start: float | None
) -> tuple:
    """MODEL §4's order for hourly_cost on the replan model, as :func:`search_total`: a plan's hourly cost, its largest
    stage's, is at least the cost bound of each pair it selects, so a pair whose bound is above a target, or that
    cannot fit in the room beside such pairs (:func:`fitting`), holds no plan within the target."""
    lows = [np.asarray(lo, dtype=float) for lo in r.lows]
    anywhere = fitting(r, [np.ones(lo.size, dtype=bool) for lo in lows], room)
    if not all(a.any() for a in anywhere):  # a stage with no pair that fits: the whole model says so
        return runs(r, highs, "hourly_cost", clock, limits)
    least = max(float(lo[a].min()) for lo, a in zip(lows, anywhere))  # every stage pays at least its least bound
    most = max(float(lo[a].max()) for lo, a in zip(lows, anywhere))
    wanted = lambda target: fitting(r, [a & (lo <= target) for lo, a in zip(lows, anywhere)], room)  # noqa: E731
    return _search(r, highs, clock, runs, limits, "hourly_cost", wanted, (least, most), start)


def _search(
    r: ReplanModel,
    highs: HighsModel,
    clock: Stopwatch,
    runs: Runs,
    limits: list,
    criterion: str,
    wanted: Callable[[float], list[np.ndarray]],
    span: tuple[float, float],
    start: float | None,
) -> tuple:
    """The runs of a search (module docstring) on ``criterion``: ``wanted(target)``, the pairs that can hold a plan
    whose ``criterion`` is within the target; ``span``, the least and the largest floor of a pair that can (every
    such pair is wanted at the largest); ``start``, a lower bound on the optimum, or None."""
    least, most = span
    target = least * (1 + PROBE) if start is None else max(least, start) * (1 + PROBE)
    openings = Openings(r, highs)
    try:
        while True:
            every = target >= most
            openings.set(wanted(target))
            clock.note(f"{r.inst.name}: HiGHS, {criterion} over {sum(map(np.count_nonzero, openings.open)):,} pairs")
            status, values, value, seconds = runs(r, highs, criterion, clock, limits, (criterion,))
            wider = least + 4 * max(target - least, PROBE * max(abs(least), 1.0))  # (some room where that floor is 0)
            if values is None and status == Status.INFEASIBLE and not every:
                target = wider  # open more pairs: four times the room above the least floor
                continue
            if values is None or status != Status.OPTIMAL or value <= target or every:
                break  # (a run over every pair is the whole model's)
            target = min(value, wider)  # the plan found bounds the optimum: no pair whose floor is above it is needed
        if values is None or status != Status.OPTIMAL:
            return status, values, value, seconds
        openings.set(wanted(value + TIE_TOL * max(1.0, abs(value))))  # what a tie may select
        return runs(r, highs, criterion, clock, limits, None, (values, value))
    finally:
        openings.set([np.ones(t.size, dtype=bool) for t in r.c.found.tables])


SEARCHES = {"total_cost": search_total, "hourly_cost": search_hourly}


def search_replan(
    r: ReplanModel, highs: HighsModel, clock: Stopwatch, runs: Runs, limits: list, room: float, key: tuple
):
    """The search of ``key[0]`` (a criterion of SEARCHES) in ``room``, started from the optimum the same search found
    last under the same restrictions (``key``) in at least as much room (a frontier's looser cap), when there is one:
    a solve in less room can be no better. Returns what ``runs`` returns and keeps the optimum found for the next."""
    known = r.optima.get(key)
    start = known[1] if known is not None and room <= known[0] else None
    status, values, value, seconds = SEARCHES[key[0]](r, highs, clock, runs, limits, room, start)
    if status == Status.OPTIMAL and value is not None:
        r.optima[key] = (room, value)
    return status, values, value, seconds
