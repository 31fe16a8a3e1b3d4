"""Re-solves of edited copies of one instance on one reusable model: what the levers and the diagnosis's
searches run (:mod:`drivers.tradeoffs.levers`, :mod:`drivers.diagnosis.thresholds`). Kept apart from the searches so the
levers under every plan import no more than they use.
"""

from __future__ import annotations

from trainground.models.edits import edited
from trainground.models.instance import Instance
from trainground.models.load import InstanceError
from trainground.models.result import Result
from trainground.solver.laws import calculus as calc
from trainground.solver.solve import Planner, fewest_rows_suffice
from trainground.solver.stopwatch import Stopwatch
from trainground.solver.table.pairs import TableCache
from trainground.solver.table.row_cap import TableTooLarge
from trainground.solver.tolerances import TIE_TOL


class Feasibility:
    """Re-solves edited copies of one instance, reusing one model while the structure allows, within a
    budget of ``max_solves`` solves (None: no budget) and the command's clock, when it has a time limit.

    Two models are kept: one for the questions that need every row (a least cost, a shortest makespan), and
    one whose table lists only each (cadence, K) pair's fewest on-time training groups, for the questions
    whether a plan exists at all (``feasibility``), where that reduction is exact
    (:meth:`solver.solve.Planner.fewest_groups_only`): with start-up counted, a pool raised far above the
    instance's lists one row per group count it could spare, millions of rows the question never needs.

    An edited copy whose table would hold more rows than a table may (:class:`TableTooLarge`, counted before any
    is allocated) is not solved: its re-solve answers None, as an invalid edit does, and ``refused`` keeps why
    (the caller's line says so; the copies are the program's, so the user's file is not blamed)."""

    def __init__(
        self,
        base: Instance,
        cache: TableCache | None = None,
        clock: Stopwatch | None = None,
        max_solves: int | None = None,
    ):
        self.base = base
        self._planners: dict[bool, Planner | None] = {False: None, True: None}
        self.cache = cache or TableCache(8)  # the edited copies share most of the base's pair quantities
        self.clock = clock
        self.max_solves = max_solves
        self.solves = 0
        self.refused: TableTooLarge | None = None  # the last re-solve's, when its table was too large
        self.refusals = 0  # re-solves not run because their table was too large

    def spent(self) -> bool:
        return (self.max_solves is not None and self.solves >= self.max_solves) or (
            self.clock is not None and self.clock.expired()
        )

    def solve(
        self,
        changes: dict,
        objective: str = "makespan",
        time_limit: float | None = None,
        allowance: float = 0.0,
        feasibility: bool = False,
    ) -> Result | None:
        """:meth:`_solve`, None with ``refused`` set when the edited copy's table is too large."""
        return self._within_rows(self._solve, changes, objective, time_limit, allowance, feasibility)

    def shortest(self, changes: dict) -> Result | None:
        """:meth:`_shortest`, None with ``refused`` set when the edited copy's table is too large."""
        return self._within_rows(self._shortest, changes)

    def cheapest(self, changes: dict, criterion: str) -> Result | None:
        """:meth:`_cheapest`, None with ``refused`` set when the edited copy's table is too large."""
        return self._within_rows(self._cheapest, changes, criterion)

    def _within_rows(self, solve, *args, **kwargs) -> Result | None:
        self.refused = None
        try:
            return solve(*args, **kwargs)
        except TableTooLarge as exc:
            self.refused = exc
            self.refusals += 1
            return None

    def _solve(
        self,
        changes: dict,
        objective: str = "makespan",
        time_limit: float | None = None,
        allowance: float = 0.0,
        feasibility: bool = False,
    ) -> Result | None:
        """The result of the edited instance (None when the edit makes it invalid, or the budget is spent);
        ``time_limit`` bounds this solve, within what the clock has left; ``allowance``: MODEL §11's Δ."""
        if self.spent():
            return None
        try:
            inst = edited(self.base, changes)
        except InstanceError:
            return None
        self.solves += 1
        fewest = feasibility and allowance == 0 and fewest_rows_suffice(inst)
        return self._run(inst, objective, fewest, time_limit, allowance, feasibility)

    def _shortest(self, changes: dict) -> Result | None:
        """The plan of the shortest makespan of the edited instance (None as :meth:`solve`), one solve of the
        budget. With start-up counted, a pool far above what a plan uses lists a row per group count it could
        spare; so where a plan exists iff one exists among each pair's fewest groups, the shortest makespan
        among those comes first, and the search over every row then looks only at rows no longer than that
        plan's (the same grid, the deadline lowered to its makespan): the optimum and its ties are among them."""
        if self.spent():
            return None
        try:
            inst = edited(self.base, changes)
        except InstanceError:
            return None
        self.solves += 1
        if not fewest_rows_suffice(inst):
            return self._run(inst, "makespan", False)
        first = self._run(inst, "makespan", True, feasibility=True)
        if first.plan is None:
            return first
        lowered = {
            "schedule.deadline": min(inst.schedule.deadline, first.plan.makespan_s * (1 + TIE_TOL)),
            "schedule.cadence.max": max(calc.cadence_top(inst), inst.schedule.cadence.min),
        }
        return self._run(edited(inst, lowered), "makespan", False)

    def _cheapest(self, changes: dict, criterion: str) -> Result | None:
        """The plan of the least ``criterion`` (total_cost or hourly_cost) of the edited instance (None as
        :meth:`solve`), one solve of the budget. Where a plan exists iff one exists among each pair's fewest
        groups, the least cost among those comes first, and the search over every row then runs with that
        cost as its budget (``limits.max_<criterion>``), so that the group counts no plan that cheap can
        pay for are never listed (:func:`solver.table.group_counts.budget_groups`): the optimum and its ties are
        within it."""
        if self.spent():
            return None
        try:
            inst = edited(self.base, changes)
        except InstanceError:
            return None
        self.solves += 1
        if not fewest_rows_suffice(inst):
            return self._run(inst, criterion, False)
        first = self._run(inst, criterion, True, feasibility=True)  # the least cost among the fewest rows
        if first.plan is None:
            return first
        budget = getattr(first.plan, criterion) * (1 + 4 * TIE_TOL)
        return self._run(edited(inst, {f"limits.max_{criterion}": budget}), criterion, False)

    def _run(
        self,
        inst: Instance,
        objective: str,
        fewest: bool,
        time_limit: float | None = None,
        allowance: float = 0.0,
        feasibility: bool = False,
    ) -> Result:
        left = None if self.clock is None else self.clock.remaining()
        if time_limit is not None:
            left = time_limit if left is None else min(left, time_limit)
        planner = self._planner(inst, fewest)
        return planner.solve(objective, time_limit=left, allowance=allowance, feasibility=feasibility)

    def _planner(self, inst: Instance, fewest: bool) -> Planner:
        """The reusable planner of this kind (every row, or each pair's fewest groups) pointed at ``inst``."""
        planner = self._planners[fewest]
        if planner is None or not planner.retarget(inst):
            planner = self._planners[fewest] = Planner(
                inst, reusable=True, cache=self.cache, fewest_groups=fewest, covered=False
            )
        return planner

    def feasible(self, changes: dict) -> bool:
        result = self.solve(changes, feasibility=True)
        return result is not None and result.plan is not None
