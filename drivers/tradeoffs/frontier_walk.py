"""The ε-constraint walk of a frontier (:mod:`drivers.tradeoffs.frontier`): from the cheapest plan, cap the makespan
below the last plan found and solve again, until no faster plan exists.

On a fine grid every admissible makespan can be a point, far more than a plot or a table shows and one solve each;
so on a grid of more than FINE_GRID cadences two points are by default at least RESOLUTION of the makespan range
apart (:func:`default_resolution`), each still an exact frontier plan, both ends exact. A staged plan chooses a
cadence per stage, so its makespans are as many as the combinations of its stages' grids: the same default holds
when those combinations are more than FINE_GRID; a re-planned one (``capacity: replan``) takes REPLAN_RESOLUTION, since
each of its points is a search of several HiGHS runs over the replan model (seconds each, not a fraction of one).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from trainground.drivers.diagnosis.diagnose import diagnosed
from trainground.drivers.hold import HoldingPlanner
from trainground.models.instance import Instance
from trainground.models.result import Result
from trainground.models.stage_rules import stage_instance
from trainground.solver.laws.calculus import grid_points
from trainground.solver.solve import Planner
from trainground.solver.tolerances import SPAN_TOL

STAGED_GAP = 1e-7  # relative: a staged walk's next cap below a plan's makespan (0.06 s on a week)
RESOLUTION = 0.005  # on a fine grid, by default points at least this share of the makespan range apart: 200 at most
FINE_GRID = 5000  # a grid of more cadences than this is fine: its frontier takes RESOLUTION by default
REPLAN_RESOLUTION = 0.025  # the same for a re-planned staged instance: 40 points at most


@dataclass
class Walked:
    """What a walk found: its plans (in the order found), why it stopped (``grid``: no faster admissible makespan;
    ``infeasible``: none of the faster ones has a plan; ``time_limit``; a solver status), the solve that ended it
    (when one did), the cap of the last solve, the allowance the points carried under hold, the least makespan
    between two points it solved for (0: every point) and its solves."""

    found: list[Result]
    stopped: str
    end: Result | None
    cap: float | None
    carried: float | None
    resolution_s: float
    solves: int


def default_resolution(inst: Instance) -> float:
    """The resolution a frontier of ``inst`` takes unless told: RESOLUTION when its plans choose among more than
    FINE_GRID cadences (:func:`cadence_choices`), REPLAN_RESOLUTION when they do and it re-plans its stages, else 0
    (every point)."""
    if cadence_choices(inst) <= FINE_GRID:
        return 0.0
    return REPLAN_RESOLUTION if inst.stages is not None and inst.stages.capacity == "replan" else RESOLUTION


def cadence_choices(inst: Instance) -> int:
    """The cadences a plan of ``inst`` chooses among: its grid's points; on a staged instance, a cadence per stage, the
    product of the stages' grids' points (each combination a makespan of its own)."""
    if inst.stages is None:
        return grid_points(inst)
    return math.prod(grid_points(stage_instance(inst, stage)) for stage in inst.stages.list)


class _Solves:
    """The solves of one walk, counted: each on the walk's rows (under hold the cheapest plan's allowance, once
    found, carried by every later one) and given what is left of the walk's time."""

    def __init__(self, planner: Planner | HoldingPlanner, diagnose: bool, time_limit: float | None):
        self.planner, self.diagnose = planner, diagnose
        self.until = None if time_limit is None else time.monotonic() + time_limit
        self.carried: float | None = None
        self.count = 0

    def __call__(self, objective: str, cap: float | None) -> Result | None:
        """The optimum of ``objective`` with the makespan at most ``cap``; None once the walk's time has run out.
        The walk's first solve is diagnosed when it has no plan (``diagnose``)."""
        left = {} if self.until is None else {"time_limit": self.until - time.monotonic()}
        if left and left["time_limit"] <= 0:
            return None
        if isinstance(self.planner, HoldingPlanner) and self.carried is not None:
            result = self.planner.solve_carried(self.carried, objective, max_makespan=cap, **left)
        else:
            result = self.planner.solve(objective, max_makespan=cap, **left)
            self.carried = result.hold.allowance_s if result.hold is not None else None
        if self.diagnose and self.count == 0:
            result = diagnosed(self.planner.inst, result)
        self.count += 1
        return result


def next_cap(spans: np.ndarray | None, span: float, gap: float) -> float | None:
    """The cap of the solve after a plan of makespan ``span``: the next admissible makespan below (``spans``:
    every one, the exact walk; None when none is left), or ``span`` less STAGED_GAP of it and ``gap``."""
    if spans is None:
        return span * (1 - STAGED_GAP) - gap
    faster = spans[spans < span * (1 - SPAN_TOL)]
    return float(faster[-1]) if faster.size else None


def walk(
    planner: Planner | HoldingPlanner,
    criterion: str,
    spans: np.ndarray | None,
    step: Callable[[float], None],
    diagnose: bool = True,
    time_limit: float | None = None,
    resolution: float = 0.0,
    shortest: float | None = None,
) -> Walked:
    """ε-constraint walk from the cheapest plan to the fastest: the plans it found and how it ended.

    ``spans``: the admissible makespans (the exact walk: each cap the next below, so every frontier plan is
    found). None: each cap is the last plan's makespan less STAGED_GAP of it and ``resolution`` of the makespan
    range (the cheapest plan's makespan less ``shortest``, its low end; None, a staged instance: the fastest
    plan's, one solve), so every point is an exact frontier plan, no two are closer than that, and a frontier plan
    skipped is less than that much faster than a point shown (and costs between that point and the next faster one);
    a walk with such a gap ends with the fastest plan itself (:func:`_fastest_end`), so both ends are exact. ``step(share)``: the share of the walk done, 0 to 1.
    ``time_limit``: seconds for the walk, each solve given what is left; when they run out the walk stops
    (``stopped``: ``time_limit``) with the plans found so far."""
    solve = _Solves(planner, diagnose, time_limit)
    found: list[Result] = []
    cap: float | None = None
    last_cap: float | None = None
    end: Result | None = None
    stopped, gap, top, low = "grid", 0.0, 0.0, 0.0
    while True:
        last_cap = cap
        result = solve(criterion, cap)
        if result is None:
            stopped = "time_limit"
            break
        if result.status != "optimal":
            end, stopped = result, result.status
            if gap > 0 and result.status == "infeasible":
                stopped, last_cap = _fastest_end(solve, criterion, found)
            break
        span = result.plan.makespan_s
        if spans is None and found and span >= found[-1].plan.makespan_s:
            break  # no faster plan under the cap
        found.append(result)
        if len(found) == 1:
            top, low = span, span
            if spans is not None:
                low = float(spans[0]) if spans.size else span
            elif resolution > 0:
                low = _shortest(solve, shortest, span)
                gap = resolution * max(0.0, top - low)
        cap = next_cap(spans, span, gap)
        step(_share(cap, top, low, len(found)))
        if cap is None:
            break
    step(1.0)
    return Walked(found, stopped, end, last_cap, solve.carried, gap, solve.count)


def _share(cap: float | None, top: float, low: float, found: int) -> float:
    """The share of a walk done once its next cap is ``cap``: of the makespan range from ``top`` down to ``low``; with
    no range known (a staged walk of every point) one more point each time, never all until the walk ends."""
    if cap is None:
        return 1.0
    if top > low:
        return min(1.0, max(0.0, (top - cap) / (top - low)))
    return found / (found + 1)


def _shortest(solve: _Solves, shortest: float | None, span: float) -> float:
    """The low end of the makespan range: ``shortest``, else the fastest plan's makespan (one solve; ``span``, the
    cheapest plan's, when none is found in time)."""
    if shortest is not None:
        return shortest
    fastest = solve("makespan", None)
    return fastest.plan.makespan_s if fastest is not None and fastest.plan is not None else span


def _fastest_end(solve: _Solves, criterion: str, found: list[Result]) -> tuple[str, float]:
    """When a cap finds no plan: the fastest plan below the last one found (its makespan by one solve, then the
    cheapest plan of that makespan by another), appended to ``found``. Returns why the walk stopped
    (``infeasible``: no plan is faster than the last found; ``time_limit``) and the cap that proved it."""
    below = next_cap(None, found[-1].plan.makespan_s, 0.0)
    assert below is not None
    fast = solve("makespan", below)
    if fast is None:
        return "time_limit", below
    if fast.status != "optimal" or fast.plan is None:
        return "infeasible", below
    point = solve(criterion, fast.plan.makespan_s)
    if point is None:
        return "time_limit", below
    if point.status == "optimal" and point.plan is not None:
        found.append(point)
    return "infeasible", next_cap(None, fast.plan.makespan_s, 0.0) or below
