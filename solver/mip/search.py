"""The searches over a :class:`~solver.mip.live.LiveModel`: which pairs to open, in which HiGHS runs.

Cost criteria open the pairs with the lowest cost bounds first, then every pair whose bound
does not exceed the plan found (closing the others is exact: the bound is valid), then
break ties by makespan (MODEL.md §4). The makespan criterion opens pairs shortest first in
growing chunks until one holds a plan (every shorter pair was then proven infeasible), then
breaks ties by total cost at that makespan. Plans still tied go to the fewest GPUs, then the
fewest nodes (:mod:`solver.mip.ties`), and the search says how many it found.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainground.models.result import Status
from trainground.solver.mip.live import LiveModel
from trainground.solver.mip.ties import Ties, break_ties, tied_plan
from trainground.solver.stopwatch import Stopwatch
from trainground.solver.tolerances import SPAN_TOL, TIE_TOL

# Pairs the first HiGHS run opens (doubling while it finds no plan). The cost bound is tight on the
# bundled instances, so the single lowest-bound pair is usually the optimum's (bench/solve.py, "probe sizes").
COST_PROBE_PAIRS = 1
MAKESPAN_PROBE_PAIRS = 6


@dataclass
class Search:
    """What the HiGHS runs of one solve found so far."""

    status: str | None = None
    value: float | None = None
    bound: float | None = None
    values: object = None
    runs: int = 0
    highs_seconds: float = 0.0  # HiGHS's cumulated run time after the last run (it counts over the handle's life)
    ties: Ties | None = None  # the plans found tied with the optimum after MODEL.md §4's order

    def take(self, outcome) -> None:
        self.runs += outcome.runs
        self.highs_seconds = max(self.highs_seconds, outcome.highs_seconds)
        self.status, self.bound, self.value, self.values = (
            outcome.status,
            outcome.bound,
            outcome.objective_value,
            outcome.values,
        )

    def absorb_tie(self, tie: Search) -> None:
        """Take in a tie-breaking search's runs; a better tied plan replaces this one's, and a tie-break
        that ended unproven (time limit, error) marks this search so while keeping its plan."""
        self.runs += tie.runs
        self.highs_seconds = max(self.highs_seconds, tie.highs_seconds)
        if tie.status in (Status.TIME_LIMIT, Status.ERROR):
            self.status = tie.status


def cheapest_first(
    live: LiveModel, objective: str, candidates: np.ndarray, lower: np.ndarray, clock: Stopwatch
) -> Search:
    """The optimum under a cost criterion over the ``candidates`` pairs, ``lower`` their cost bounds."""
    search = Search()
    rows = np.flatnonzero(candidates)[np.argsort(lower[candidates], kind="stable")]
    order = rows.tolist()
    size, start, probe = COST_PROBE_PAIRS, 0, []
    while start < len(order) and not clock.expired():
        probe = order[start : start + size]
        search.take(live.run(objective, probe))
        if search.status != Status.INFEASIBLE:
            break
        start += size
        size *= 2
    if search.status != Status.OPTIMAL:
        search.bound = _global_bound(search.bound, lower[probe], lower[order[start + len(probe) :]])
        return search
    best = search.value
    needed = rows[lower[rows] <= best + TIE_TOL * max(1.0, abs(best))].tolist()
    if not set(needed) <= set(probe):
        previous = search.values, search.value
        search.take(live.run(objective, needed))
        if search.values is None:  # out of time before a better plan: keep the probe's, unproven
            search.values, search.value = previous
            search.status = Status.TIME_LIMIT
        if search.status != Status.OPTIMAL:
            outside = rows[lower[rows] > best + TIE_TOL * max(1.0, abs(best))]
            search.bound = _global_bound(search.bound, lower[needed], lower[outside])
            return search
    _break_cost_tie(live, objective, rows, lower, search, clock)
    bound = search.value + TIE_TOL * max(1.0, abs(search.value))
    search.value = _break_last_ties(
        live, objective, bound, rows[lower[rows] <= bound].tolist(), search, search.value, clock
    )
    return search


def _break_last_ties(
    live: LiveModel, criterion: str, bound: float, rows: list[int], search: Search, value: float, clock: Stopwatch
) -> float:
    """Among the plans tied with the search's (``criterion`` at most ``bound``, ``value`` the plan's), the
    fewest GPUs, then the fewest nodes: the search keeps the winner and the count of ties; returns the
    winner's ``criterion``."""
    winner, search.ties, runs = break_ties(live, criterion, bound, rows, tied_plan(live, search.values, value), clock)
    search.runs += runs
    search.values = winner.values
    return winner.value


def _global_bound(run_bound: float | None, held: np.ndarray, unopened: np.ndarray) -> float | None:
    """A lower bound on the optimum over every candidate pair after a run cut short: the run's own
    bound over the pairs it held (their cost bounds when HiGHS gave none), and the cost bounds of the
    pairs it did not hold."""
    parts = [float(v.min()) for v in (held, unopened) if v.size]
    if run_bound is not None:
        parts = [run_bound] + parts[1:] if held.size else [run_bound] + parts
    return min(parts) if parts else None


def _break_cost_tie(
    live: LiveModel, objective: str, rows: np.ndarray, lower: np.ndarray, search: Search, clock: Stopwatch
) -> None:
    """Among plans within TIE_TOL of the best cost, the shortest makespan (MODEL §4): the shortest plan of the
    pairs shorter than the search's with the cost held within the tie (one run, the cost a row), then the
    cheapest of the pairs of that makespan."""
    best = search.value
    bound = best + TIE_TOL * max(1.0, abs(best))
    span = live.pairs.makespan
    chosen = live.block_rows[live.selected(search.values).key]
    shorter = rows[(span[rows] < span[chosen] * (1 - SPAN_TOL)) & (lower[rows] <= bound)].tolist()
    if not shorter:
        return
    shortest = Search()
    with live.extra_cap("hourly" if objective == "hourly_cost" else "total", bound):
        shortest.take(live.run("makespan", shorter))
    search.absorb_tie(shortest)
    if shortest.values is None:
        return
    search.values = shortest.values  # shorter, its cost held within the tie: kept if the next run fails
    if shortest.status != Status.OPTIMAL:
        return
    found = span[live.block_rows[live.selected(shortest.values).key]]
    same = [r for r in shorter if abs(span[r] - found) <= SPAN_TOL * found]
    tie = Search()
    tie.take(live.run(objective, same, bound))
    search.absorb_tie(tie)
    if tie.values is not None and tie.value <= bound:
        search.values, search.value = tie.values, tie.value


def shortest_first(live: LiveModel, candidates: np.ndarray, clock: Stopwatch) -> Search:
    """The shortest makespan over the ``candidates`` pairs, ties broken by total cost."""
    search = Search()
    span = live.pairs.makespan
    order = [int(r) for r in np.flatnonzero(candidates)[np.argsort(span[candidates], kind="stable")]]
    size, start = MAKESPAN_PROBE_PAIRS, 0
    while start < len(order) and not clock.expired():
        end = min(start + size, len(order))
        while end < len(order) and span[order[end]] <= span[order[end - 1]] * (1 + SPAN_TOL):
            end += 1  # keep every K of the last cadence in the chunk
        search.take(live.run("makespan", order[start:end]))
        if search.status != Status.INFEASIBLE:
            break
        start, size = end, size * 2
    if search.status != Status.OPTIMAL:
        return search
    chosen = live.block_rows[live.selected(search.values).key]
    same = [r for r in order if abs(span[r] - span[chosen]) <= TIE_TOL * span[chosen]]
    tie = Search()
    tie.take(live.run("total_cost", same))
    search.absorb_tie(tie)
    if tie.values is not None:
        search.values = tie.values
        bound = tie.value + TIE_TOL * max(1.0, abs(tie.value))
        _break_last_ties(live, "total_cost", bound, same, search, tie.value, clock)
    return search
