"""The rows a solve with start-up counted needs (MODEL §8, and the hold basis §11).

With start-up counted, each (cadence, K) pair has one row per training-group count worth having, and a
pool far larger than what a plan uses (or a fine cadence grid) lists millions of them
(:mod:`solver.table.group_counts`). A cost search needs few: a plan on each pair's fewest groups costs some
V0, so the optimum costs at most V0, and a row whose cost bound is above V0 cannot hold it. So a
:class:`~solver.solve.Planner` of such an instance starts from the table of each pair's fewest groups,
and before each solve :class:`RowCover` makes its table hold what that solve needs:

- a cost criterion (total_cost, hourly_cost) without a budget: first the search over the fewest rows,
  under the solve's own restrictions, gives V0 (no plan there: none at all, MODEL §8's rows of a pair
  differ in m alone and fewer groups ask for nothing more; but under a makespan cap, which may cut a
  pair's fewest groups, the slowest, and not its others: every row); the table then holds every row whose
  bound (:func:`solver.table.group_counts.covered_groups`) is at most V0, and keeps it while later solves' V0
  stay within it. The optimum, its ties and the tie-breaks' rows all lie within V0;
- a feasibility question without a budget or a makespan cap: the fewest rows, which every table holds;
- the makespan criterion, a feasibility question, or a cost criterion whose fewest rows hold no plan, under a
  makespan cap: every row within the cap (the table of the instance with the cap for its deadline: a row past
  it cannot serve the solve, and near a frontier's fast end most rows are past it);
- the makespan criterion without a cap, or any budget (the instance's or the solve's): every row.

A table that covers more than a solve needs serves it unchanged; otherwise the planner is retargeted to
the table that does (:meth:`~solver.solve.Planner.use_pairs`).

A walk (a frontier, from its cheapest plan to its fastest: each solve's cap below the last plan's makespan, and
each plan a little dearer) sets a ``headroom``. Its cost tables then cover that share more cost than the solve
needs, and leave out the rows past the solve's makespan cap, which no later solve of the walk can use; the next
solves find their rows in the table instead of building one each, and the table stays near the size of the rows
within the cap. A solve with a larger cap, or none, first goes back to the fewest rows.
"""

from __future__ import annotations

import math

import numpy as np

from trainground.solver.laws import calculus as calc
from trainground.solver.stopwatch import Stopwatch
from trainground.solver.table import pairs as pair_tables
from trainground.solver.table.group_counts import CostCover
from trainground.solver.tolerances import SPAN_TOL

EVERY = ("every", math.inf)  # what a table of every row covers
FEWEST = ("fewest", 0.0)  # each pair's fewest on-time row
WITHIN = "within"  # (WITHIN, cap): every row whose makespan is within the cap


class RowCover:
    """What the planner's current table covers: FEWEST, (criterion, the cost its rows reach), (WITHIN, a makespan
    cap) or EVERY."""

    def __init__(self, headroom: float = 0.0) -> None:
        self.covers: tuple[str, float] = FEWEST
        self.cut = math.inf  # a cost table leaves out the rows whose makespan is past this
        self.headroom = headroom  # a walk's: a cost table covers this share more cost than its solve needs

    def fit(self, planner, objective: str, feasibility: bool, budgets: bool, restrict: dict, clock: Stopwatch) -> None:
        """Make ``planner``'s table hold the rows this solve needs; ``restrict``: the solve's candidates()
        arguments and its caps."""
        inst = planner.inst
        budgeted = budgets or inst.limits.max_hourly_cost is not None or inst.limits.max_total_cost is not None
        cap = restrict["candidates"]["max_makespan"]  # the fewest rows are a pair's slowest
        if feasibility and not budgeted and cap is None:
            return
        if budgeted:
            self._cover(planner, EVERY)
            return
        if objective == "makespan" or feasibility:
            self._cover_within(planner, cap)
            return
        if self.covers == EVERY:
            return
        if self.covers[0] == WITHIN or self.cut < (math.inf if cap is None else cap):
            self._cover(planner, FEWEST)  # a table cut at a cap lacks the fewest rows of the pairs past it
        first = self._fewest_search(planner, objective, restrict, clock)
        if first is None and self.covers != FEWEST:  # a cost table need not hold a plan under a lower cap
            self._cover(planner, FEWEST)
            first = self._fewest_search(planner, objective, restrict, clock)
        if first is None:  # no plan on the fewest rows: none on any row, unless a makespan cap cut them
            if cap is not None:
                self._cover_within(planner, cap)
            return
        if self.covers[0] == objective and self.covers[1] >= first:
            return
        cut = cap if cap is not None and self.headroom > 0 else math.inf
        self._cover(planner, (objective, first * (1.0 + self.headroom)), cut)

    def searched(self, planner, objective: str, feasibility: bool, budgets: bool, restrict: dict, caps, clock, search):
        """The search of a solve (``search()``, over the planner's table; ``restrict``: its candidates() arguments,
        ``caps`` its caps) on the rows it needs: in a walk the table held first (:meth:`may_hold`), kept when its
        optimum is the solve's (:meth:`holds`); otherwise the table :meth:`fit` makes, searched."""
        if self.may_hold(planner.inst, objective, restrict["max_makespan"], feasibility or budgets):
            found = search()
            if self.holds(found):
                return found
        self.fit(planner, objective, feasibility, budgets, {"candidates": restrict, "caps": caps}, clock)
        return search()

    def may_hold(self, inst, objective: str, cap: float | None, restricted: bool) -> bool:
        """Whether a walk's solve of ``objective`` under the makespan cap ``cap`` may first search the table held
        (:meth:`holds` then says whether its optimum is the solve's): a cost table of the same criterion, cut at a
        cap no lower, and a solve without budgets (``restricted``: budgets or a feasibility question)."""
        budgeted = restricted or inst.limits.max_hourly_cost is not None or inst.limits.max_total_cost is not None
        within = self.cut >= (math.inf if cap is None else cap)
        return self.headroom > 0 and not budgeted and self.covers[0] == objective and within

    def holds(self, search) -> bool:
        """Whether the optimum ``search`` found on the table held is the solve's: every row whose cost bound is
        at most the table's cost, within the solve's cap, is in the table, so an optimum (and every plan tied
        with it) that costs no more than that is one over every row."""
        return search is not None and search.values is not None and search.value <= self.covers[1]

    def _cover_within(self, planner, cap: float | None) -> None:
        """Every row whose makespan is within ``cap`` (every row: None); a table of every row, or of the rows
        within a cap as large, serves."""
        if self.covers == EVERY or (cap is not None and self.covers[0] == WITHIN and self.covers[1] >= cap):
            return
        self._cover(planner, EVERY if cap is None else (WITHIN, cap))

    def _fewest_search(self, planner, objective: str, restrict: dict, clock: Stopwatch) -> float | None:
        """The least ``objective`` of a plan on each pair's fewest groups under the solve's restrictions."""
        candidates = planner.fewest_groups_only(planner.candidates(**restrict["candidates"]), exact_only=False)
        if not candidates.any():
            return None
        lower = planner.lower_bounds(objective)
        search = planner.search_pairs(
            objective, candidates, lower, planner.lower_bounds("total_cost"), restrict["caps"], clock
        )
        return None if search is None or search.values is None else float(search.value)

    def cover_every(self, planner) -> None:
        self._cover(planner, EVERY)

    def _cover(self, planner, covers: tuple[str, float], cut: float = math.inf) -> None:
        """Point ``planner`` at the table of ``covers``; a cost table without the rows past ``cut``."""
        if self.covers == covers and self.cut == cut:
            return
        inst, cache = planner.inst, planner.cache
        if covers == EVERY:
            pairs = pair_tables.build(inst, cache)
        elif covers == FEWEST:
            pairs = pair_tables.build(inst, cache, fewest_groups=True)
        elif covers[0] == WITHIN:
            pairs = pair_tables.build(_within(inst, covers[1]), cache)
        else:
            p = planner.pairs
            first = planner.fewest_groups_only(np.ones(p.size, dtype=bool), exact_only=False)
            cover = CostCover(
                covers[0], covers[1], p.cadence[first], p.kept[first], p.groups[first], planner.hourly_lb[first]
            )
            pairs = pair_tables.build(inst if cut == math.inf else _within(inst, cut), cache, cover=cover)
        planner.use_pairs(pairs)
        self.covers = covers
        self.cut = cut

    def reset(self) -> None:
        """The planner was pointed at another instance, with the table of its fewest rows."""
        self.covers = FEWEST
        self.cut = math.inf


def _within(inst, cap: float):
    """``inst`` with the makespan cap ``cap`` for its deadline and its own cadence grid: its table holds the rows
    within the cap."""
    sched = inst.schedule
    cadence = sched.cadence.model_copy(update={"max": calc.cadence_top(inst)})
    deadline = min(sched.deadline, cap * (1 + SPAN_TOL))
    return inst.model_copy(update={"schedule": sched.model_copy(update={"deadline": deadline, "cadence": cadence})})
