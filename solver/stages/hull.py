"""The searches of MODEL §4's order on the compact staged model (:mod:`solver.stages.compact`), and its plans.

``hourly_cost`` and ``makespan`` are linear in the compact model: each criterion is one HiGHS run, the next
run holding it within TIE_TOL of its optimum and starting from the first run's plan (from HiGHS 1.16 on).
``total_cost = hourly·T/3600`` is a product; it is quasi-concave on positive values, so over the finite set of
plans its minimum lies at a vertex of the lower-left convex hull of their (hourly, T) points (a point inside
the hull, or on an edge, has a larger product: along a segment the product is a concave parabola). The
vertices are found by weighted sums ``a·hourly + b·T`` (one MIP each, dichotomic search) from a least-hourly
plan and a least-T plan (either may lie off the hull's end vertex, which a run with both weights positive then
finds below the edge): each edge's normal gives a run, cut off at the edge's own value, that either finds a
vertex below the edge or proves the edge is one (the cut-off is HiGHS's ``objective_bound``, whose "no plan"
is trusted from HiGHS 1.16 on, CUTOFF_TRUSTED; below, the run is repeated without it). An edge whose region
cannot hold a product below the best found (every point of it lies on or above the line the previous run
proved, within the edge's box, where the product's smallest value is at a corner of that line) is not
searched. Among the points within TIE_TOL of the least product, the order's tie-breaks (makespan, then
hourly) pick the plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib.metadata import version

import pyomo.core as pyo
from pyomo.repn import generate_standard_repn

from trainground.models.result import Plan, Status
from trainground.solver.highs import NO_BOUND, RESTART_PAIRS, STAGED_OPTIONS, HighsModel, Solution
from trainground.solver.mip.assemble import ObjectiveMismatch
from trainground.solver.stages.compact import CompactModel, run_makespan
from trainground.solver.stages.compact_plans import part_plans
from trainground.solver.stages.plans import own_startup, run_plan
from trainground.solver.stopwatch import Stopwatch
from trainground.solver.tolerances import COST_CHECK_TOL, REL_TOL, SPAN_TOL, TIE_TOL

# HiGHS #3273 (found on 1.15.1): a wrong conflict could cut off an optimum under an upper limit on the objective
# (objective_bound, or a starting incumbent's value), so such a run could say "no plan", or return the start,
# with a better one left; its fix (PR #3275) was merged in September 2026, before 1.16.0. From 1.16 on both are
# trusted; below, a cut-off run that finds nothing is repeated uncut and a second run gets no start.
CUTOFF_TRUSTED = tuple(int(part) for part in version("highspy").split(".")[:2]) >= (1, 16)


def linear_value(expr, values) -> float:
    """A linear expression's value at a HiGHS solution."""
    repn = generate_standard_repn(expr, compute_values=True)
    return float(repn.constant) + sum(
        float(c) * float(values.get(v, 0.0) or 0.0) for c, v in zip(repn.linear_coefs, repn.linear_vars)
    )


@dataclass
class Point:
    hourly: float
    makespan: float
    values: Solution

    @property
    def product(self) -> float:
        return self.hourly * self.makespan


class Stop(Exception):
    """A run that ended without an optimum: its status (time limit, error)."""

    def __init__(self, status: Status):
        super().__init__(str(status))
        self.status = status


def search_options(counts_startup: bool, pairs: int) -> dict:
    """HiGHS's options for the compact model's runs: the staged ones, restarting after the root when the start-up
    is counted or the stage rows pass RESTART_PAIRS (the figures are in solver/highs.py)."""
    return {**STAGED_OPTIONS, "mip_allow_restart": counts_startup or pairs > RESTART_PAIRS}


class CompactSearch:
    """HiGHS runs on the compact model under a solve's ``limits`` (rows added for the search, removed after)."""

    def __init__(self, c: CompactModel, highs: HighsModel, clock: Stopwatch):
        self.c, self.highs, self.clock = c, highs, clock
        self.options = search_options(c.inst.counts_startup, sum(t.size for t in c.found.tables))
        self.seconds = 0.0
        self.runs = 0
        self.rows: list = []  # the rows held, each its own component (removed by release)
        self._named = 0

    def hold(self, relation) -> None:
        """Add a row for the rest of the search (or until :meth:`release`)."""
        self._named += 1
        row = pyo.Constraint(expr=relation)
        self.c.model.add_component(f"held_{self._named}", row)
        self.rows.append(row)
        self.highs.add_rows([row])

    def release(self, rows: list | None = None) -> None:
        """Remove ``rows`` (default every row held) from HiGHS and the model."""
        gone = list(self.rows if rows is None else rows)
        self.highs.remove_rows(gone)
        for row in gone:
            self.c.model.del_component(row)
        self.rows = [r for r in self.rows if all(r is not g for g in gone)]

    def minimise(self, a: float, b: float, below: float = NO_BOUND, start: Point | None = None) -> Point | None:
        """The plan minimising a·hourly + b·T under the rows held (None: no plan, or none whose a·hourly +
        b·T is below ``below``), HiGHS starting from ``start`` (a plan that meets the rows held) when given."""
        m = self.c.model
        m.del_component("weighted")
        m.weighted = pyo.Objective(expr=a * self.c.hourly + b * self.c.makespan, sense=pyo.minimize)
        self.highs.use_objective(m.weighted)
        options = {**self.options, "objective_bound": below}
        outcome = self.highs.run(options, self.clock.remaining(), None if start is None else start.values)
        self.seconds, self.runs = outcome.highs_seconds, self.runs + outcome.runs
        if outcome.status == Status.INFEASIBLE:
            return None
        if outcome.status != Status.OPTIMAL or outcome.values is None:
            raise Stop(outcome.status)
        values = outcome.values
        span = run_makespan(self.c, linear_value(self.c.makespan, values), values)
        return Point(linear_value(self.c.hourly, values), span, values)

    def lexicographic(self, first: str) -> Point | None:
        """The plan least on ``first`` (hourly or makespan), then on the other, the first held within TIE_TOL."""
        weights = {"hourly": (1.0, 0.0), "makespan": (0.0, 1.0)}
        found = self.minimise(*weights[first])
        if found is None:
            return None
        best = found.hourly if first == "hourly" else found.makespan
        expr = self.c.hourly if first == "hourly" else self.c.makespan
        mark = len(self.rows)
        self.hold(expr <= best + TIE_TOL * max(1.0, abs(best)))
        start = found if CUTOFF_TRUSTED else None  # an incumbent's bound cuts like objective_bound (HiGHS #3273)
        second = self.minimise(*weights["makespan" if first == "hourly" else "hourly"], start=start)
        self.release(self.rows[mark:])
        return second or found

    def least_product(self) -> Point | None:
        """The plan least on hourly·T (module docstring), ties broken by makespan, then hourly."""
        cheap = self.minimise(1.0, 0.0)
        if cheap is None:
            return None
        fast = self.minimise(0.0, 1.0)
        assert fast is not None
        vertices = [cheap, fast]
        edges: list[tuple[Point, Point, tuple[float, float, float] | None]] = [(cheap, fast, None)]
        while edges:
            left, right, below = edges.pop()
            best = min(p.product for p in vertices)
            if below is not None and _floor(left, right, below) > best * (1 + TIE_TOL):
                continue
            a, b = left.makespan - right.makespan, right.hourly - left.hourly
            if a <= 0 or b <= 0:
                continue  # the ends coincide on a criterion: no vertex between them
            edge = (a * left.hourly + b * left.makespan) * (1 - TIE_TOL) - TIE_TOL
            found = self.minimise(a, b, below=edge)
            if found is None and not CUTOFF_TRUSTED:  # the edge's ends are plans: a "no plan" can be HiGHS #3273
                found = self.minimise(a, b)
            if found is None:
                continue  # nothing below the edge: a facet of the hull
            line = a * found.hourly + b * found.makespan
            if line >= edge:
                continue  # on the edge within the tie: a facet too
            vertices.append(found)
            edges += [(left, found, (a, b, line)), (found, right, (a, b, line))]
        least = min(p.product for p in vertices)
        tied = [p for p in vertices if p.product <= least * (1 + TIE_TOL)]
        return min(tied, key=lambda p: (p.makespan, p.hourly))


def _floor(left: Point, right: Point, line: tuple[float, float, float]) -> float:
    """The least hourly·T over the points of the box between ``left`` and ``right`` on or above the line
    a·hourly + b·T = v: at a corner of that line within the box (the product is concave along it, and grows
    away from the origin)."""
    a, b, v = line
    corners = []
    for h in (left.hourly, right.hourly):
        T = (v - a * h) / b
        if right.makespan <= T <= left.makespan:
            corners.append(h * T)
    for T in (left.makespan, right.makespan):
        h = (v - b * T) / a
        if left.hourly <= h <= right.hourly:
            corners.append(h * T)
    return min(corners) if corners else -math.inf


def solve_compact(
    c: CompactModel,
    highs: HighsModel,
    objective: str,
    clock: Stopwatch,
    allowance: float,
    max_makespan: float | None,
    max_hourly_cost: float | None,
    max_inference_gpus: int | None,
) -> tuple[Status, Point | None, CompactSearch]:
    """MODEL §4's order on the compact model under a solve's rows: the deadline with the allowance Δ
    (T + Δ <= deadline), a makespan cap, the hourly budgets, a card cap (status, the plan's point, the search)."""
    search = CompactSearch(c, highs, clock)
    m, inst = c.model, c.inst
    try:
        search.hold(c.makespan <= inst.schedule.deadline * (1 + REL_TOL) - allowance)
        if max_makespan is not None:
            search.hold(c.makespan <= max_makespan * (1 + SPAN_TOL))
        for cap in (inst.limits.max_hourly_cost, max_hourly_cost):
            if cap is not None:
                search.hold(c.hourly <= cap * (1 + REL_TOL))
        if max_inference_gpus is not None:
            shapes = inst.inference.shapes
            search.hold(sum(s.gpus_per_replica * m.x[K, s.name] for K in c.Ks for s in shapes) <= max_inference_gpus)
        if objective == "total_cost":
            point = search.least_product()
        else:
            point = search.lexicographic("hourly" if objective == "hourly_cost" else "makespan")
    except Stop as stop:
        return stop.status, None, search
    finally:
        search.release()
    return (Status.OPTIMAL if point is not None else Status.INFEASIBLE), point, search


def compact_plan(c: CompactModel, point: Point, status: Status) -> Plan:
    """The run's plan of a compact solution: each stage's plan with its own start-up, then the run's; the
    model's hourly cost and makespan must be the plan's (a bug otherwise: ObjectiveMismatch)."""
    parts = [own_startup(si, p) for si, p in zip(c.found.insts, part_plans(c, point.values))]
    plan = run_plan(c.inst, c.found.insts, parts)
    for name, mine, model in (
        ("hourly_cost", plan.hourly_cost, point.hourly),
        ("makespan", plan.makespan_s, point.makespan),
    ):
        if status == Status.OPTIMAL and abs(mine - model) > COST_CHECK_TOL * max(1.0, abs(mine)):
            raise ObjectiveMismatch(
                f"{c.inst.name}: the compact model's {name} is {model:.10g}, the plan's {mine:.10g}"
            )
    return plan
