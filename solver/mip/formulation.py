"""What a :class:`~solver.solve.Planner` holds of a model, whichever formulation it is.

:class:`Formulation` is the interface the planner reads: the instance and its pair table, the allowance a
solve uses, the caps of one solve, the search of MODEL.md §4 under an objective, and what a result's
assembly reads (the blocks built, the one a solution selects, the model's size). Two formulations implement
it: :class:`PairModel`, the one live pair model of the instance (:class:`~solver.mip.live.LiveModel`, searched
by :mod:`solver.mip.search`), and the confidence solve's models, one per pair
(:class:`solver.confidence.search.PairModels`). The planner asks each for what it needs and never for
its type.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from trainground.models.instance import Instance
from trainground.solver.mip.live import LiveModel
from trainground.solver.mip.search import Search, cheapest_first, shortest_first
from trainground.solver.stopwatch import Stopwatch
from trainground.solver.table.pairs import Pairs


class BuiltModel(Protocol):
    """What a plan's extraction reads of a model (:func:`solver.mip.assemble.extract_plan`): the instance, its
    pair table, the pyomo model with its built pair blocks, each block's row in the table, and the block a
    solution selects. A Formulation is one; so is each stage's sub-model of a staged solve."""

    @property
    def inst(self) -> Instance: ...

    @property
    def pairs(self) -> Pairs: ...

    @property
    def model(self) -> Any: ...

    @property
    def block_rows(self) -> dict: ...

    def selected(self, values) -> Any:
        """The built pair block whose selection binary is on in a solution."""


class Formulation(BuiltModel, Protocol):
    """The model of one instance as a planner uses it across solves."""

    clock: Stopwatch
    reusable: bool  # can be pointed at another instance of the same structure (retarget)
    threads: int

    @property
    def blocks(self) -> dict: ...

    def use(self, allowance: float) -> None:
        """Solve with the allowance Δ of MODEL §11 from now on (where the formulation's rows read it)."""

    def retarget(self, inst: Instance, pairs: Pairs) -> bool:
        """Point the model at another instance of the same structure (False: it cannot)."""
        ...

    def set_caps(self, caps: list) -> None:
        """This solve's extra restrictions, (kind, limit); None limits skip."""

    def end_solve(self) -> None:
        """Drop this solve's caps."""

    def search(
        self, objective: str, candidates: np.ndarray, lower: np.ndarray, lower_total: np.ndarray, clock: Stopwatch
    ) -> Search:
        """The optimum under ``objective`` over the ``candidates`` pairs (MODEL §4's order): ``lower`` their
        bounds on the objective's cost criterion, ``lower_total`` on total cost (a makespan search's ties)."""
        ...

    def size(self) -> dict[str, int]: ...


class PairModel(LiveModel):
    """The instance's one live pair model (MODEL §3), searched as :mod:`solver.mip.search` does. Its rows do not
    read the allowance: the planner caps the makespan at deadline - Δ."""

    def use(self, allowance: float) -> None:
        return None

    def search(
        self, objective: str, candidates: np.ndarray, lower: np.ndarray, lower_total: np.ndarray, clock: Stopwatch
    ) -> Search:
        if objective == "makespan":
            return shortest_first(self, candidates, clock)
        return cheapest_first(self, objective, candidates, lower, clock)
