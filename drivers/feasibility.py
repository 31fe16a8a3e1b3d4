"""Re-solves of edited copies of one instance on one reusable model: what the levers and the diagnosis's
searches run (:mod:`drivers.levers`, :mod:`drivers.thresholds`). Kept apart from the searches so the
levers under every plan import no more than they use.
"""

from __future__ import annotations

from trainground.models.edits import edited
from trainground.models.instance import Instance
from trainground.models.load import InstanceError
from trainground.models.result import Result
from trainground.solver.pairs import TableCache
from trainground.solver.solve import Planner, fewest_rows_suffice
from trainground.solver.stopwatch import Stopwatch


class Feasibility:
    """Re-solves edited copies of one instance, reusing one model while the structure allows, within a
    budget of ``max_solves`` solves (None: no budget) and the command's clock, when it has a time limit."""

    def __init__(
        self,
        base: Instance,
        cache: TableCache | None = None,
        clock: Stopwatch | None = None,
        max_solves: int | None = None,
    ):
        self.base = base
        self._planner: Planner | None = None
        self._probe: Planner | None = None  # feasibility questions: each pair's fewest groups (Planner fewest_groups)
        self.cache = cache or TableCache(8)  # the edited copies share most of the base's pair quantities
        self.clock = clock
        self.max_solves = max_solves
        self.solves = 0

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
        """The result of the edited instance (None when the edit makes it invalid, or the budget is spent);
        ``time_limit`` bounds this solve, within what the clock has left; ``allowance``: MODEL §11's Δ."""
        if self.spent():
            return None
        try:
            inst = edited(self.base, changes)
        except InstanceError:
            return None
        probe = feasibility and fewest_rows_suffice(inst)
        planner = self._probe if probe else self._planner
        if planner is None or not planner.retarget(inst):
            planner = Planner(inst, reusable=True, cache=self.cache, fewest_groups=probe)
        if probe:
            self._probe = planner
        else:
            self._planner = planner
        self.solves += 1
        left = None if self.clock is None else self.clock.remaining()
        if time_limit is not None:
            left = time_limit if left is None else min(left, time_limit)
        return planner.solve(objective, time_limit=left, allowance=allowance, feasibility=feasibility)

    def feasible(self, changes: dict) -> bool:
        result = self.solve(changes, feasibility=True)
        return result is not None and result.plan is not None
