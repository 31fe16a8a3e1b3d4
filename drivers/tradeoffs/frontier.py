"""The Pareto frontier of makespan against cost, by ε-constraint re-solves of one built model.

Makespans live on a grid (``n·L + extra`` over the admissible cadences), so the frontier
is found exactly by walking it from the cheap end (:mod:`drivers.tradeoffs.frontier_walk`): solve for the
least cost, record the plan (the tie-break already makes it the fastest of the cheapest), cap the makespan
below the plan's and solve again, until no faster plan exists. With ``resolution=0`` (the default unless the grid
is fine) the cap is the next admissible makespan below, so no grid point is skipped and none is visited twice; with a
resolution (by default RESOLUTION on a grid of more than FINE_GRID cadences) it is the next at least that share of
the makespan range below, so every point is an exact frontier plan, no two are closer than that, both ends are
exact, and a fine grid's walk takes a few hundred solves, not one per admissible makespan. A plan that the cap lets through but that is no cheaper than a
faster one cannot occur (its faster rival would have been chosen), and is filtered out all the same.

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
STAGED_GAP (and the resolution, by default RESOLUTION once its stages' grids combine to more than
FINE_GRID cadences), so two plans closer than that in makespan are one point.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from trainground.drivers.hold import HoldingPlanner, base_planner, planner_for
from trainground.drivers.replays import ReplayCache
from trainground.drivers.tradeoffs.frontier_walk import Walked, default_resolution, walk
from trainground.drivers.tradeoffs.pareto import cost_of, hull_corners, nondominated
from trainground.models.instance import Instance
from trainground.models.result import Result, key_columns
from trainground.solver.laws.calculus import cadence_grid, grid_points
from trainground.solver.table.row_cap import TableTooLarge
from trainground.solver.tolerances import SPAN_TOL

CRITERIA = ("total_cost", "hourly_cost")
DAY_S = 86400.0

Progress = Callable[[int, int], None]  # (models solved or skipped so far, upper bound on the total)
PROGRESS_STEPS = 1000  # a walk's progress without its makespans listed: the share of its makespan range covered
LISTED_ENTRIES = 1_000_000  # the grids whose every row a walk lists up front (listing_pays)
WALK_HEADROOM = 0.02  # a walk's tables of rows cover 2 % more cost than a solve needs (Planner's walk)


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
    resolution_s: float = 0.0  # the least makespan between two points the walk solved for (0: every point)
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
            "resolution_s": self.resolution_s,
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
    resolution: float | None = None,
) -> Frontiers:
    """Every non-dominated (makespan, cost) plan of ``inst`` for each criterion, from one built model.

    ``diagnose``: explain why when not even the cheapest plan exists (the walk's later,
    expected infeasible solves are never diagnosed). ``replays``: under hold, replays of plans already
    replayed (a solve of the same instance just before) are taken from there. ``time_limit``: seconds for
    every walk together, each criterion's walk given an equal share of what is left; a walk that runs out
    stops with the plans it found (``stopped``: ``time_limit``). ``resolution``: the least makespan between two
    points as a share of the makespan range (:func:`walk`; 0: every point; None: :func:`default_resolution`).
    """
    resolution = default_resolution(inst) if resolution is None else resolution
    until = None if time_limit is None else time.monotonic() + time_limit
    planner = planner_for(inst, replays, walk=WALK_HEADROOM)
    table = planner.planner if isinstance(planner, HoldingPlanner) else planner  # the solver's, every row
    exact = resolution <= 0 and inst.stages is None
    listed = exact or (inst.stages is None and listing_pays(inst))
    spans = None
    if listed:  # every makespan the walk can meet; with a resolution only a speed-up, so a table too large is skipped
        try:
            spans = np.unique(table.every_row().makespan)
        except TableTooLarge:
            if exact:
                raise
    out = Frontiers(
        instance=inst.name or "",
        deadline_s=inst.schedule.deadline,
        budgets={"total_cost": inst.limits.max_total_cost, "hourly_cost": inst.limits.max_hourly_cost},
    )
    grid = cadence_grid(inst)
    fastest_grid = float(grid[0]) if grid.size else 0.0
    per = max(1, spans.size) if spans is not None else PROGRESS_STEPS
    low = None if inst.stages is not None else shortest_span(inst, table.pairs)  # before a walk cuts the table
    for k, criterion in enumerate(criteria):

        def step(share: float, k: int = k) -> None:
            if on_progress is not None:
                on_progress(k * per + int(round(share * per)), per * len(criteria))

        share = None if until is None else (until - time.monotonic()) / (len(criteria) - k)
        walked = walk(planner, criterion, spans if exact else None, step, diagnose, share, resolution, low)
        out.frontiers[criterion] = frontier_of(criterion, walked)
        out.solves += walked.solves
        front = out.frontiers[criterion]
        at_grid = inst.stages is None and front.points and front.fastest.plan.cadence_s <= fastest_grid * (1 + SPAN_TOL)
        if front.points and front.stopped == "infeasible" and not (spans is None and at_grid):
            front.bounded_by, extra = _fast_end_bound(inst, criterion, front.cap)
            out.solves += extra
        elif front.points and front.stopped not in ("grid", "infeasible"):
            front.bounded_by = front.stopped
        elif front.points and inst.stages is not None:
            front.bounded_by = "constraints"  # a staged walk ends when no faster plan exists
        elif front.points and not at_grid:
            front.bounded_by = "constraints"  # the faster grid points failed the per-pair checks
    return out


def listing_pays(inst: Instance) -> bool:
    """Whether a walk lists every row of its table before its first solve (then no solve rebuilds the table): without
    the start-up counted every row is a pair's one row; with it, a row per training-group count worth having, so
    only on grids of at most LISTED_ENTRIES (cadence, K) entries (the seed at a 0.01 s step: 545,000 entries,
    1.7 million rows). Above, each solve's table holds the rows it needs (:mod:`solver.table.rows`)."""
    entries = grid_points(inst) * inst.freshness.max_versions_kept
    return not inst.counts_startup or entries <= LISTED_ENTRIES


def shortest_span(inst: Instance, pairs) -> float:
    """The low end of a one-stage frontier's makespan range, the scale of its resolution: n·L + extra_time at the
    shortest admissible cadence (with the start-up counted a plan there takes about that, its fill in place of
    one cadence), read off the table without listing every row."""
    return inst.workload.iterations * float(pairs.cadence.min()) + inst.schedule.extra_time if pairs.size else 0.0


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


def frontier_of(criterion: str, walked: Walked) -> Frontier:
    """The frontier of one criterion from its walk: the non-dominated plans found, fastest first, and the corners."""
    points = nondominated(walked.found, criterion)
    corners = hull_corners([r.plan.makespan_s for r in points], [cost_of(r, criterion) for r in points])
    return Frontier(
        criterion=criterion,
        points=points,
        corners=corners,
        stopped=walked.stopped,
        end=walked.end,
        cap=walked.cap,
        carried_allowance_s=walked.carried if len(points) > 1 else None,
        resolution_s=walked.resolution_s,
    )
