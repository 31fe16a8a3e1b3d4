"""The per-pair screen of a diagnosis: every (cadence, K) entry of an instance's grid with the verdict
of each per-pair constraint family apart (MODEL.md §3.3, §3.4, §3.7 and the pool-capacity bound of
the pair table). :mod:`drivers.diagnosis.candidates` reads the closed-form thresholds of the limits off it.
No solve and no pyomo here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainground.models.edits import edited
from trainground.models.instance import Instance
from trainground.solver.laws import calculus as calc
from trainground.solver.table.pairs import TableCache, best_supply, mean_gaps
from trainground.solver.tolerances import REL_TOL, ZERO_SHARE_TOL

FAMILIES = (
    "deadline",
    "update_time",
    "max_mean_gap",
    "effective_intake",
    "max_exceedance",
    "max_group_drop",
    "pool_capacity",
)
FRESHNESS = ("max_mean_gap", "max_exceedance", "max_group_drop")
WIDEST = 8.0  # a deadline (or cadence bound) is widened at most this many times


@dataclass(frozen=True)
class Screen:
    """Per-entry quantities over ``grid`` × ``kept`` (arrays (G, K); ``grid`` and ``groups`` (G,)),
    judged against the limits of ``judge``."""

    judge: Instance
    grid: np.ndarray
    kept: np.ndarray
    span: np.ndarray  # makespan T, s (with count_startup a lower bound: the screen never computes the fill)
    groups: np.ndarray  # fewest training groups with U <= L; 0 where none
    gap: np.ndarray  # (G, K) the mean version gap row 7 limits: W_use/L, or the consumed gap's under hold
    exceedance: np.ndarray
    drop: np.ndarray
    attempts: np.ndarray  # R_raw, inf where the effective intake is 0
    demand: np.ndarray  # token demand, tokens/s
    supply: np.ndarray  # best-shape supply of every pool beside the training groups, tokens/s

    @property
    def entries(self) -> int:
        return int(self.grid.size * self.kept.size)

    def ok(self, family: str) -> np.ndarray:
        """Entries ``family`` lets through, as a (G, K) mask."""
        fr, shape = self.judge.freshness, (self.grid.size, self.kept.size)
        if family == "deadline":
            return self.span <= self.judge.schedule.deadline * (1 + REL_TOL)
        if family == "update_time":
            return np.broadcast_to((self.groups > 0)[:, None], shape)
        if family == "effective_intake":
            return np.isfinite(self.attempts)
        if family == "pool_capacity":
            return self.supply >= self.demand * (1 - REL_TOL)
        limit = getattr(fr, family)
        if limit is None:
            return np.ones(shape, dtype=bool)
        if family == "max_mean_gap":
            return np.broadcast_to(self.gap <= limit * (1 + REL_TOL), shape)
        value = self.exceedance if family == "max_exceedance" else self.drop
        return value <= limit * (1 + REL_TOL) + ZERO_SHARE_TOL

    def passing(self, *lifted: str) -> np.ndarray:
        """Entries every family but ``lifted`` lets through."""
        keep = np.ones((self.grid.size, self.kept.size), dtype=bool)
        for family in FAMILIES:
            if family not in lifted:
                keep &= self.ok(family)
        return keep

    def cut_alone(self) -> dict[str, int]:
        """{family: entries it cuts on its own}, families that cut none left out."""
        counts = {f: int(np.count_nonzero(~self.ok(f))) for f in FAMILIES}
        return {f: n for f, n in counts.items() if n}


def screen(inst: Instance, cache: TableCache, widen: dict | None = None, judge: Instance | None = None) -> Screen:
    """The screen of ``inst`` with ``widen`` edits (cadence bounds, K, max_groups, a pool's size) applied to the
    entries looked at; every family is judged by the limits of ``judge`` (default ``inst``)."""
    judge = judge or inst
    c = inst.schedule.cadence
    top = calc.cadence_top(inst)
    lifted = {f"freshness.{f}": None for f in FRESHNESS}
    # the deadline lifted (the screen judges it), the grid's extent kept by an explicit cadence.max
    changes = (
        lifted
        | {"schedule.cadence.max": max(top, c.min), "schedule.deadline": _far(inst), "schedule.count_startup": False}
        | {"planning.basis": "steady_state"}
        | (widen or {})
    )
    opened = edited(inst, changes)
    g = opened.schedule.cadence
    if calc.cadence_top(opened) < g.min * (1 - REL_TOL) or (top < c.min * (1 - REL_TOL) and not widen):
        return _empty(judge)
    d = cache.demand(opened)
    w = inst.workload
    occ = calc.occupancy_of(opened.environment.occupancy)
    gap = mean_gaps(opened, occ, d.w_use, d.grid, d.kept.size, consumed=inst.holds, cache=cache)
    span = np.asarray(d.span)
    if inst.counts_startup:  # (n-1)·L + extra_time: a lower bound on fill + (n-1)·L + U(m) + extra_time
        span = span - d.grid[:, None]
    return Screen(
        judge=judge,
        grid=d.grid,
        kept=d.kept,
        span=span,
        groups=d.groups,
        gap=gap,
        exceedance=d.exceedance,
        drop=d.drop,
        attempts=d.attempts,
        demand=d.attempts * w.tokens_per_attempt,
        supply=best_supply(judge, d.groups, d.kept, d.grid),
    )


def _far(inst: Instance) -> float:
    """A deadline no entry of a screen reaches."""
    c = inst.schedule.cadence
    top = max(calc.cadence_top(inst), c.min) * WIDEST * 4
    return (inst.workload.iterations * top + inst.schedule.extra_time) * 1e3 + inst.schedule.deadline


def _empty(judge: Instance) -> Screen:
    none = np.zeros((0, judge.freshness.max_versions_kept))
    return Screen(
        judge=judge,
        grid=np.zeros(0),
        kept=np.arange(1, judge.freshness.max_versions_kept + 1),
        span=none,
        groups=np.zeros(0, dtype=int),
        gap=none,
        exceedance=none,
        drop=none,
        attempts=none,
        demand=none,
        supply=none,
    )
