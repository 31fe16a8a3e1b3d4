"""A confidence solve's models and searches (MODEL.md §9): one pair per HiGHS run.

Each pair's model is its own (:func:`solver.confidence.model.pair_model`): the pair's block, built once per
allowance by the model's own code, and the scenario rows of that pair, so a run carries no row of another
pair and costs HiGHS's time plus a few milliseconds. The cost search takes the pairs in the order of their
bounds (:class:`solver.confidence.planning.Screen`), tightens a pair's bound from its own scenarios when it comes up
(and puts it back in line), runs HiGHS on it cut off at the best cost found, and stops when the next bound
exceeds that cost; ties on cost go to the shorter makespan (MODEL §4). The makespan search takes the pairs
shortest first until one holds a plan, then the cheapest of those as short.
"""

from __future__ import annotations

import heapq

import numpy as np

from trainground.models.instance import Instance
from trainground.models.result import Status
from trainground.solver.confidence.model import PairExtension, pair_model
from trainground.solver.confidence.planning import Confidence
from trainground.solver.highs import NO_BOUND, STAGE_OPTIONS, ArrayRunner, Outcome
from trainground.solver.mip.block_arrays import block_arrays
from trainground.solver.mip.model import add_pair, build_model
from trainground.solver.mip.search import Search
from trainground.solver.stopwatch import Stopwatch
from trainground.solver.table.pairs import Pairs
from trainground.solver.tolerances import SPAN_TOL, TIE_TOL


class PairModels:
    """A confidence solve's pair models, and what a result's assembly reads of a live model
    (:mod:`solver.mip.assemble`): the blocks built (of the current allowance), their pairs, the one a solution
    selects. Blocks are built per allowance: their host caps and level bounds read its scenario needs."""

    reusable = False

    def __init__(
        self, inst: Instance, pairs: Pairs, conf: Confidence, threads: int = 1, clock: Stopwatch | None = None
    ):
        self.inst, self.pairs, self.conf = inst, pairs, conf
        self.threads = threads
        self.clock = clock or Stopwatch()
        self.runner = ArrayRunner(threads)
        self.keys = pairs.keys()
        self.allowance = 0.0
        self._models: dict[float, tuple] = {}  # allowance -> (pyomo model, block rows by key, arrays by row)
        self._caps: list[tuple[str, float]] = []
        with self.clock.phase("build"):
            self.use(0.0)

    def use(self, allowance: float) -> None:
        """Solve with the allowance Δ (MODEL §11) in the scenarios from now on."""
        self.allowance = float(allowance)
        if self.allowance not in self._models:
            screen = self.conf.at(self.allowance)
            model = build_model(self.inst, self.pairs, False, PairExtension(_Levels(self.inst, self.pairs, screen)))
            self._models[self.allowance] = (model, {}, {})

    @property
    def model(self):
        return self._models[self.allowance][0]

    @property
    def blocks(self) -> dict:
        return self.model.blocks

    @property
    def block_rows(self) -> dict:
        return self._models[self.allowance][1]

    def set_caps(self, caps: list) -> None:
        """This solve's extra restrictions, (kind, limit) with kind hourly | total | cards; None limits skip."""
        self._caps = [(kind, limit) for kind, limit in caps if limit is not None]

    def end_solve(self) -> None:
        self._caps = []

    def retarget(self, inst: Instance, pairs: Pairs) -> bool:
        """A confidence solve's models read its scenario set: another instance needs its own."""
        return False

    def search(
        self, objective: str, candidates: np.ndarray, lower: np.ndarray, lower_total: np.ndarray, clock: Stopwatch
    ) -> Search:
        """The optimum under ``objective`` (the module's docstring): ``lower`` the pairs' bounds on its cost
        criterion, ``lower_total`` on total cost (the makespan search's ties)."""
        if objective == "makespan":
            return shortest(self, candidates, lower_total, clock)
        return cheapest(self, objective, candidates, lower, clock)

    def run(self, objective: str, row: int, bound: float = NO_BOUND) -> Outcome:
        """One HiGHS run of pair ``row``'s model (its scenarios must leave it a plan: ``Screen.needs(row)``),
        cut off at ``bound``, within what is left of the clock's time limit."""
        needs = self.conf.at(self.allowance).needs(row)
        if needs is None:
            raise ValueError(f"pair {row} holds no confidence plan: it has no model")
        if self.clock.expired():
            return Outcome(status=Status.TIME_LIMIT, objective_value=None, bound=None, highs_seconds=0.0, runs=0)
        blk, arrays = self._block(row)
        limits = self.inst.limits
        caps = self._caps + [("hourly", limits.max_hourly_cost), ("total", limits.max_total_cost)]
        with self.clock.phase("build"):
            problem = pair_model(blk, arrays, needs, objective, [(k, v) for k, v in caps if v is not None])
        options = {**STAGE_OPTIONS[objective], "objective_bound": bound}
        outcome = self.runner.run(problem, arrays.columns, options, self.clock.remaining())
        if outcome.status == Status.ERROR and options["presolve"] == "on":  # as LiveModel.run: retried exactly
            outcome = self.runner.run(problem, arrays.columns, {**options, "presolve": "off"}, self.clock.remaining())
            outcome.runs = 2
        return outcome

    def _block(self, row: int) -> tuple:
        model, rows, arrays = self._models[self.allowance]
        key = self.keys[row]
        if key not in model.blocks:
            self.clock.note(f"{self.inst.name}: building the model of pair {key}")
            with self.clock.phase("build"):
                blk = add_pair(model, row, key)
                rows[key] = row
                arrays[row] = block_arrays(blk)
        return model.blocks[key], arrays[row]

    def selected(self, values):
        """The built pair block whose selection binary is on in a solution."""
        return max(self.blocks.values(), key=lambda blk: float(values.get(blk.z, 0.0) or 0.0))

    def size(self) -> dict[str, int]:
        columns, rows = self.runner.size
        return {
            "grid_points": self.pairs.grid_points,
            "pairs": self.pairs.size,
            "pairs_built": len(self.blocks),
            "variables": columns,
            "rows": rows,
        }


class _Levels:
    """What :class:`solver.confidence.model.PairExtension` reads of a pair: its largest scenario levels."""

    def __init__(self, inst: Instance, pairs: Pairs, screen):
        self.inst, self.pairs, self.screen = inst, pairs, screen

    def __call__(self, row: int) -> tuple[float, float]:
        return self.screen.levels(row)


def cheapest(models: PairModels, objective: str, candidates: np.ndarray, lower: np.ndarray, clock: Stopwatch) -> Search:
    """The optimum under a cost criterion over the ``candidates`` pairs, ``lower`` their cost bounds (see the
    module's docstring)."""
    screen = models.conf.at(models.allowance)
    scale = models.pairs.makespan / 3600.0 if objective == "total_cost" else np.ones(models.pairs.size)
    span = models.pairs.makespan
    queue = [(float(lower[r]), int(r), False) for r in np.flatnonzero(candidates)]
    heapq.heapify(queue)
    search, best, best_row = Search(), np.inf, None
    while queue:
        bound, row, refined = heapq.heappop(queue)
        tie = best + TIE_TOL * max(1.0, abs(best)) if np.isfinite(best) else np.inf
        if bound > tie or not np.isfinite(bound):  # in order: no pair left can hold a better plan
            break
        if clock.expired():
            search.status, search.bound = Status.TIME_LIMIT, min(best, bound)
            break
        if not refined:
            heapq.heappush(queue, (max(bound, screen.bound(row) * scale[row]), row, True))
            continue
        outcome = models.run(objective, row, tie)
        search.runs += outcome.runs
        search.highs_seconds = max(search.highs_seconds, outcome.highs_seconds)
        if outcome.status in (Status.TIME_LIMIT, Status.ERROR) and outcome.values is None:
            search.status, search.bound = outcome.status, min(best, bound)
            break
        if outcome.values is None or outcome.objective_value is None:
            continue
        value = float(outcome.objective_value)
        if value < best - TIE_TOL * max(1.0, abs(best)) or best_row is None or span[row] < span[best_row]:
            search.values, search.value, best_row = outcome.values, value, row
        best = min(best, value)
        if outcome.status != Status.OPTIMAL:
            search.status, search.bound = outcome.status, outcome.bound
            break
    if search.status is None:
        search.status = Status.OPTIMAL if search.values is not None else Status.INFEASIBLE
        search.bound = search.value
    return search


def shortest(models: PairModels, candidates: np.ndarray, lower_total: np.ndarray, clock: Stopwatch) -> Search:
    """The shortest makespan over the ``candidates`` pairs (one feasibility run per pair, shortest first), ties
    broken by total cost (``lower_total``: the pairs' total-cost bounds)."""
    screen, span = models.conf.at(models.allowance), models.pairs.makespan
    order = [int(r) for r in np.flatnonzero(candidates)[np.argsort(span[candidates], kind="stable")]]
    search = Search()
    for row in order:
        if clock.expired():
            search.status = Status.TIME_LIMIT
            return search
        if not np.isfinite(screen.bound(row)):
            continue
        outcome = models.run("makespan", row)
        search.runs += outcome.runs
        search.highs_seconds = max(search.highs_seconds, outcome.highs_seconds)
        if outcome.status in (Status.TIME_LIMIT, Status.ERROR):
            search.status = outcome.status
            return search
        if outcome.values is None:
            continue
        same = candidates & (np.abs(span - span[row]) <= SPAN_TOL * span[row])
        tie = cheapest(models, "total_cost", same, lower_total, clock)
        search.runs += tie.runs
        search.highs_seconds = max(search.highs_seconds, tie.highs_seconds)
        search.status, search.values = tie.status, tie.values
        search.value = search.bound = float(span[row])
        return search
    search.status = Status.INFEASIBLE
    return search
