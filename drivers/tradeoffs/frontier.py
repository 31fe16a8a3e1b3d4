"""The exact Pareto frontier of makespan against cost, by ε-constraint re-solves of one built model.

Makespans live on a grid (``n·L + extra`` over the admissible cadences), so the frontier
is found exactly by walking it from the cheap end: solve for the least cost, record the
plan (the tie-break already makes it the fastest of the cheapest), cap the makespan just
below the plan's and solve again, until no faster plan exists. The cap is the next
admissible makespan below, so no grid point is skipped and none is visited twice; a
plan that the cap lets through but that is no cheaper than a faster one cannot occur
(its faster rival would have been chosen), and is filtered out all the same.

Two frontiers come out of one :class:`~solver.solve.Planner`: makespan against total
cost and makespan against hourly cost. Every point is a full MODEL.md §6 result.

Under the hold basis (MODEL.md §11) the walk's first solve, the cheapest plan, runs the
allowance loop: its allowance Δ comes from its own replays. Every faster point is solved on
the same rows with that Δ carried (``T + Δ <= deadline``) and is not replayed: a round of
replays per point would cost a minute per dozen points (a frontier has a point per admissible
cadence, 79 on the seed), and a faster plan's own replays ask for less, since the lateness
grows with the run (tests/test_hold.py replays every point of a small frontier against the
Δ it carries). ``frontier --simulate R`` replays the corners shown.

A staged instance (MODEL.md §12) has no makespan grid to walk (its makespan sums each stage's
cadence, and with the start-up counted a fill): each cap is the plan's makespan less a relative
STAGED_GAP, so two plans closer than that in makespan are one point.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from trainground.drivers.diagnosis.diagnose import diagnosed
from trainground.drivers.hold import HoldingPlanner, base_planner, planner_for
from trainground.drivers.replays import ReplayCache
from trainground.models.instance import Instance
from trainground.models.result import Result, key_columns
from trainground.solver.laws.calculus import cadence_grid
from trainground.solver.solve import Planner
from trainground.solver.tolerances import SPAN_TOL, TIE_TOL

CRITERIA = ("total_cost", "hourly_cost")
DAY_S = 86400.0
STAGED_GAP = 1e-7  # relative: a staged walk's next cap below a plan's makespan (0.06 s on a week)

Progress = Callable[[int, int], None]  # (models solved or skipped so far, upper bound on the total)


def cost_of(result: Result, criterion: str) -> float:
    return result.plan.total_cost if criterion == "total_cost" else result.plan.hourly_cost


@dataclass
class Frontier:
    """The non-dominated plans for one cost criterion, fastest first.

    ``corners`` index the vertices of the frontier's lower convex hull (both ends included):
    the plans where its slope changes, each the cheapest plan for some price put on a day
    of schedule. ``stopped`` says why the walk ended: ``grid`` (no faster admissible
    cadence), ``infeasible`` (none of the faster ones has a plan) or a solver status.
    ``end`` is the solve that ended it, when there was one (its diagnosis when the first
    solve already failed). ``bounded_by`` says what held the fast end: ``grid`` (the fastest
    cadence of the grid), ``budget`` (a faster plan exists once the instance's budgets are
    lifted), ``constraints`` (no faster plan even without budgets) or the status that ended it.
    """

    criterion: str
    points: list[Result]
    corners: list[int]
    stopped: str
    end: Result | None = None
    bounded_by: str = "grid"
    cap: float | None = None  # the makespan cap of the solve that ended the walk
    carried_allowance_s: float | None = None  # under hold: the cheapest plan's Δ, which every faster point carries
    simulations: dict[int, dict] = field(default_factory=dict)  # point index -> simulated verdict (`--simulate`)

    @property
    def makespans(self) -> np.ndarray:
        return np.array([r.plan.makespan_s for r in self.points], dtype=float)

    @property
    def costs(self) -> np.ndarray:
        return np.array([cost_of(r, self.criterion) for r in self.points], dtype=float)

    @property
    def fastest(self) -> Result | None:
        return self.points[0] if self.points else None

    @property
    def cheapest(self) -> Result | None:
        return self.points[-1] if self.points else None

    def price_of_time(self) -> list[float | None]:
        """Per corner: cost per day saved against the next slower corner (None for the slowest)."""
        spans, costs = self.makespans, self.costs
        out: list[float | None] = []
        for here, slower in zip(self.corners, self.corners[1:] + [None]):
            if slower is None:
                out.append(None)
            else:
                out.append(float((costs[here] - costs[slower]) / (spans[slower] - spans[here]) * DAY_S))
        return out

    def to_json(self) -> dict:
        corner = set(self.corners)
        return {
            "criterion": self.criterion,
            "stopped": self.stopped,
            "bounded_by": self.bounded_by,
            "carried_allowance_s": self.carried_allowance_s,
            "fastest": 0 if self.points else None,
            "cheapest": len(self.points) - 1 if self.points else None,
            "corners": list(self.corners),
            "points": [
                {
                    "makespan_s": r.plan.makespan_s,
                    "cost": cost_of(r, self.criterion),
                    "corner": i in corner,
                    "result": r.to_json(),
                    **({"simulation": self.simulations[i]} if i in self.simulations else {}),
                }
                for i, r in enumerate(self.points)
            ],
            "end": self.end.to_json() if self.end is not None and not self.points else None,
        }


@dataclass
class Frontiers:
    """Both frontiers of one instance, with what the plots and tables draw beside them."""

    instance: str
    deadline_s: float
    budgets: dict[str, float | None]
    frontiers: dict[str, Frontier] = field(default_factory=dict)
    solves: int = 0

    @property
    def feasible(self) -> bool:
        return any(f.points for f in self.frontiers.values())

    def to_json(self) -> dict:
        return {
            "instance": self.instance,
            "deadline_s": self.deadline_s,
            "budgets": dict(self.budgets),
            "solves": self.solves,
            "frontiers": {name: f.to_json() for name, f in self.frontiers.items()},
        }


CSV_COLUMNS = (
    "frontier",
    "makespan_s",
    "makespan_days",
    "cost",
    "corner",
    "cadence_s",
    "versions_kept",
    "inference_gpus",
    "training_gpus",
    "nodes",
    "vms",
    "hourly_cost",
    "total_cost",
    "time_margin",
    "exceedance",
    "group_drop_rate",
    "allowance_s",
    "allowance_from",
)


def allowance_of(result: Result, front: Frontier) -> float | None:
    """A point's allowance Δ under hold: from its own replays (the cheapest plan), else the one it carries."""
    return result.hold.allowance_s if result.hold is not None else front.carried_allowance_s


def pools_of(frontiers: Frontiers) -> list[str]:
    """The GPU pools the frontiers' plans report, in order."""
    return list(dict.fromkeys(p.pool for f in frontiers.frontiers.values() for r in f.points for p in r.plan.pools))


def csv_columns(frontiers: Frontiers) -> list[str]:
    """CSV_COLUMNS, then the GPUs each pool uses (``gpus[POOL]``)."""
    return [*CSV_COLUMNS, *(f"gpus[{p}]" for p in pools_of(frontiers))]


def csv_rows(frontiers: Frontiers) -> list[dict]:
    rows = []
    for name, front in frontiers.frontiers.items():
        corner = set(front.corners)
        for i, r in enumerate(front.points):
            rows.append(
                {
                    "frontier": name,
                    "makespan_s": r.plan.makespan_s,
                    "makespan_days": r.plan.makespan_s / DAY_S,
                    "cost": cost_of(r, name),
                    "corner": int(i in corner),
                    **key_columns(r.plan, r.metrics),
                    "allowance_s": allowance_of(r, front),
                    "allowance_from": "replays"
                    if r.hold
                    else "carried"
                    if front.carried_allowance_s is not None
                    else None,
                    **{f"gpus[{p.pool}]": p.gpus_used for p in r.plan.pools},
                }
            )
    return rows


def frontiers(
    inst: Instance,
    criteria: tuple[str, ...] = CRITERIA,
    *,
    on_progress: Progress | None = None,
    diagnose: bool = True,
    replays: ReplayCache | None = None,
    time_limit: float | None = None,
) -> Frontiers:
    """Every non-dominated (makespan, cost) plan of ``inst`` for each criterion, from one built model.

    ``diagnose``: explain why when not even the cheapest plan exists (the walk's later,
    expected infeasible solves are never diagnosed). ``replays``: under hold, replays of plans already
    replayed (a solve of the same instance just before) are taken from there. ``time_limit``: seconds for
    every walk together, each criterion's walk given an equal share of what is left; a walk that runs out
    stops with the plans it found (``stopped``: ``time_limit``).
    """
    until = None if time_limit is None else time.monotonic() + time_limit
    planner = planner_for(inst, replays)
    table = planner.planner if isinstance(planner, HoldingPlanner) else planner  # the solver's, every row
    spans = None if inst.stages is not None else np.unique(table.every_row().makespan)
    out = Frontiers(
        instance=inst.name or "",
        deadline_s=inst.schedule.deadline,
        budgets={"total_cost": inst.limits.max_total_cost, "hourly_cost": inst.limits.max_hourly_cost},
    )
    per = max(1, spans.size) if spans is not None else 1
    grid = cadence_grid(inst)
    fastest_grid = float(grid[0]) if grid.size else 0.0
    for k, criterion in enumerate(criteria):

        def step(done: int, k: int = k) -> None:
            if on_progress is not None and spans is not None:
                on_progress(k * per + done, per * len(criteria))
            elif on_progress is not None:  # a staged walk: points found so far, one more to come
                on_progress(done, done + 1)

        share = None if until is None else (until - time.monotonic()) / (len(criteria) - k)
        out.frontiers[criterion], solves = walk(planner, criterion, spans, step, diagnose, time_limit=share)
        out.solves += solves
        front = out.frontiers[criterion]
        if front.points and front.stopped == "infeasible":
            front.bounded_by, extra = _fast_end_bound(inst, criterion, front.cap)
            out.solves += extra
        elif front.points and front.stopped != "grid":
            front.bounded_by = front.stopped
        elif front.points and spans is None:
            front.bounded_by = "constraints"  # a staged walk ends when no faster plan exists
        elif front.points and front.fastest.plan.cadence_s > fastest_grid * (1 + SPAN_TOL):
            front.bounded_by = "constraints"  # the faster grid points failed the per-pair checks
    return out


def _fast_end_bound(inst: Instance, criterion: str, cap: float | None) -> tuple[str, int]:
    """``budget`` when a plan faster than the frontier's fastest exists once the budgets are lifted,
    else ``constraints`` (one solve of the instance without its limits; none when it has none)."""
    limits = inst.limits
    if cap is None or (limits.max_hourly_cost is None and limits.max_total_cost is None):
        return "constraints", 0
    free = inst.model_copy(
        update={"limits": limits.model_copy(update={"max_hourly_cost": None, "max_total_cost": None})}
    )
    faster = base_planner(free).solve(criterion, max_makespan=cap)
    return ("budget" if faster.status == "optimal" else "constraints"), 1


def walk(
    planner: Planner | HoldingPlanner,
    criterion: str,
    spans: np.ndarray | None,
    step: Callable[[int], None],
    diagnose: bool = True,
    time_limit: float | None = None,
) -> tuple[Frontier, int]:
    """ε-constraint walk from the cheapest plan to the fastest; returns the frontier and the solves it took.
    ``spans``: the admissible makespans, each cap the next below; None (a staged instance): each cap is the
    plan's makespan less STAGED_GAP of it. ``time_limit``: seconds for the walk, each solve given what is left;
    when they run out the walk stops (``stopped``: ``time_limit``) with the plans found so far."""
    found: list[Result] = []
    cap: float | None = None
    end: Result | None = None
    stopped = "grid"
    solves = 0
    carried: float | None = None  # under hold, the cheapest plan's allowance, once it is found
    until = None if time_limit is None else time.monotonic() + time_limit
    while True:
        last_cap = cap
        left = {} if until is None else {"time_limit": until - time.monotonic()}
        if left and left["time_limit"] <= 0:
            stopped = "time_limit"
            break
        if isinstance(planner, HoldingPlanner) and carried is not None:
            result = planner.solve_carried(carried, criterion, max_makespan=cap, **left)
        else:
            result = planner.solve(criterion, max_makespan=cap, **left)
            carried = result.hold.allowance_s if result.hold is not None else None
        if diagnose and not found:
            result = diagnosed(planner.inst, result)
        solves += 1
        if result.status != "optimal":
            end, stopped = result, result.status
            break
        span = result.plan.makespan_s
        if spans is None:
            if found and span >= found[-1].plan.makespan_s:
                break  # no faster plan under the cap
            found.append(result)
            step(len(found))
            cap = span * (1 - STAGED_GAP)
            continue
        found.append(result)
        faster = spans[spans < span * (1 - SPAN_TOL)]
        step(int(spans.size - faster.size))
        if not faster.size:
            break
        cap = float(faster[-1])
    step(int(max(1, spans.size)) if spans is not None else len(found))
    points = nondominated(found, criterion)
    corners = hull_corners([r.plan.makespan_s for r in points], [cost_of(r, criterion) for r in points])
    front = Frontier(
        criterion=criterion,
        points=points,
        corners=corners,
        stopped=stopped,
        end=end,
        cap=last_cap,
        carried_allowance_s=carried if len(points) > 1 else None,
    )
    return front, solves


def nondominated(results: list[Result], criterion: str) -> list[Result]:
    """Plans no other plan beats on both makespan and cost (ties within TIE_TOL), fastest first."""
    ordered = sorted(results, key=lambda r: (r.plan.makespan_s, cost_of(r, criterion)))
    kept: list[Result] = []
    best = float("inf")
    for r in ordered:
        cost = cost_of(r, criterion)
        if not kept or cost < best - TIE_TOL * max(1.0, abs(best)):
            kept.append(r)
            best = cost
    return kept


def hull_corners(makespans: list[float], costs: list[float]) -> list[int]:
    """Indices of the vertices of the lower convex hull of (makespan, cost), points sorted by makespan.

    These are the frontier's corners: the points where its slope changes (a point on the
    chord between its neighbours on the hull is not one), both ends always included.
    """
    n = len(makespans)
    if n <= 2:
        return list(range(n))
    xs, ys = np.asarray(makespans, dtype=float), np.asarray(costs, dtype=float)
    # Scale both axes to [0, 1] so the collinearity tolerance means the same on every instance.
    xs = (xs - xs.min()) / max(xs.max() - xs.min(), 1e-300)
    ys = (ys - ys.min()) / max(ys.max() - ys.min(), 1e-300)
    hull: list[int] = []
    for i in range(n):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            cross = (xs[b] - xs[a]) * (ys[i] - ys[a]) - (ys[b] - ys[a]) * (xs[i] - xs[a])
            if cross <= 1e-12:  # b lies on or above the chord a–i: the slope does not change at b
                hull.pop()
            else:
                break
        hull.append(i)
    return hull
