"""The thresholds of a diagnosis's findings: each closed form confirmed by one solve, and re-solve
searches where it fails or none exists (a gallop then bisection over the values the pairs take, steps
then bisection over a continuous input, a node or VM cap bisected up to what a plan with it lifted
uses, a budget by solving for the least cost), each re-solving through :class:`drivers.diagnosis.feasibility.Feasibility`.
"""

from __future__ import annotations

import numpy as np

from trainground.drivers.diagnosis.candidates import edit_of
from trainground.drivers.diagnosis.feasibility import Feasibility
from trainground.drivers.diagnosis.findings import WHOLE_PLAN, Finding
from trainground.models import limits
from trainground.models.instance import Instance
from trainground.models.limits import set_limit, set_limits
from trainground.solver.tolerances import COST_CHECK_TOL

REL = 1e-3  # a search over a continuous input stops when its bracket is this narrow, relative to its feasible end
EARLY_STEPS = 2  # steps from a closed form that failed its confirming solve before the loosest (count_startup)


def settle(checker: Feasibility, f: Finding, search: bool = True) -> Finding:
    """Find ``f``'s threshold: confirm the closed form by one solve, search by re-solves only when it fails
    (``search`` False: only whether the input restores a plan, at its loosest). A search the budget (or the
    command's time limit) cut short without a plan is marked ``skipped``, and one whose re-solves were refused
    for their table's size (:class:`drivers.diagnosis.feasibility.Feasibility`) ``too_large``: never "cannot help"."""
    refused = checker.refusals
    f = _search(checker, f, search)
    searchable = f.cand.values.size > 0 or f.cand.top is not None
    f.skipped = f.value is None and f.bracket is None and checker.spent() and searchable
    f.too_large = f.value is None and f.bracket is None and not f.skipped and checker.refusals > refused
    return f


def _search(checker: Feasibility, f: Finding, search: bool) -> Finding:
    cand, inst = f.cand, checker.base
    edit = lambda value: edit_of(inst, cand, value)  # noqa: E731
    if cand.top is None and not cand.values.size:
        return f  # closed form: no pair passes whatever this input is
    if f.families == (WHOLE_PLAN,):
        return _whole_plan(checker, f, search)
    if cand.input == "deadline":
        return _deadline(checker, f, search)
    if search and cand.values.size and (cand.steps or not cand.passing) and checker.feasible(edit(cand.values[0])):
        return _found(
            f,
            cand.values[0],
            cand.exact_values,
            "closed form, confirmed by one solve"
            + ("" if cand.exact_values else ", by bisection over the pair screen to 0.1%"),
        )
    loosest = cand.values[-1] if cand.values.size and (cand.steps or cand.top is None) else cand.top
    # a closed form that failed its confirming solve under count_startup is short by the fill and U(m) the
    # screen leaves out, so its threshold is near: a few cheap steps before the loosest solve, the dearest
    early = EARLY_STEPS if inst.counts_startup and not cand.passing else 0
    if not cand.values.size and search:
        return _expand(checker, f, loosest, edit)
    if cand.values.size and not cand.steps and search:
        return _expand(checker, f, loosest, edit, cand.values[0] if not cand.passing else cand.current, early)
    if search:
        return _gallop(checker, f, edit, early)
    if checker.spent() or not checker.feasible(edit(loosest)):
        return f
    return _found(f, loosest, False, "restores a plan at its loosest (not searched)")


def _gallop(checker: Feasibility, f: Finding, edit, early: int) -> Finding:
    """A plan appears only at one of the values the pairs take, the first of which restores none: gallop up
    their list, then bisect it. The loosest value is tried after ``early`` gallop steps (no plan there: the
    input cannot help alone)."""
    cand = f.cand
    low, high, step, tried, confirmed = 0, cand.values.size - 1, 1, 0, False
    if high == 0:
        return f  # the one value, the loosest, restores no plan
    while not checker.spent():
        if not confirmed and (tried == early or low + step >= high):
            if not checker.feasible(edit(cand.values[high])):
                return f
            confirmed = True
        if low + step >= high:
            break
        if checker.feasible(edit(cand.values[low + step])):
            high, confirmed = low + step, True
            break
        low, step, tried = low + step, step * 2, tried + 1
    if not confirmed:
        return f
    while high - low > 1 and not checker.spent():
        mid = (low + high) // 2
        low, high = (low, mid) if checker.feasible(edit(cand.values[mid])) else (mid, high)
    if high - low > 1:
        f.bracket = (float(cand.values[low]), float(cand.values[high]))
        return f
    return _found(f, cand.values[high], True, f"search over the {cand.values.size:,} values the pairs take")


def _expand(
    checker: Feasibility, f: Finding, loosest: float, edit, start: float | None = None, early: int = 0
) -> Finding:
    """From ``start`` (default the current value) towards ``loosest`` by steps of 0.4 %, 1.6 %, 6.4 %, ...
    until one restores a plan, then bisection inside that step: a threshold near the start costs a few
    solves, not a bisection over the whole range. ``loosest`` is tried after the first ``early`` steps, or
    before a step would pass it (no plan there: the input cannot help alone)."""
    cand, probe = f.cand, Probe(checker, f, edit)
    now = cand.current if start is None else float(start)
    step = max(1.0, 4 * REL * now) if cand.integer else 4 * REL * now
    low, tried, confirmed = now, 0, False  # confirmed: a solve found a plan at ``loosest``
    while not checker.spent():
        value = now + step if cand.raise_ else now - step
        past = value >= loosest if cand.raise_ else value <= loosest
        if not confirmed and (tried == early or past):
            if not probe(loosest):
                return f  # one solve says this input cannot restore a plan alone
            confirmed = True
        if past:
            return _bisect(checker, f, low, loosest, probe)
        if probe(value):
            return _bisect(checker, f, low, value, probe)
        low, step, tried = value, step * 4, tried + 1
    if confirmed:  # the budget ran out between a value without a plan and one with
        f.bracket = (float(low), float(loosest))
    return f


class Probe:
    """Whether a value of ``f``'s input restores a plan, by a re-solve. For a continuous input while pairs
    pass under a budget, by the least cost with that budget lifted (a plan exists exactly when it is
    within the budget; a cost within COST_CHECK_TOL above it, where HiGHS's verdict on the budget row
    cannot be read off the reported cost, is settled by the plain re-solve): the costs then tell a
    bisection where the threshold lies."""

    def __init__(self, checker: Feasibility, f: Finding, edit):
        self.checker, self.edit = checker, edit
        self.budget = _budget(checker.base) if f.cand.passing and not f.cand.integer else None
        self.cost: dict[float, float] = {}  # value -> least cost with the budget lifted (inf: no plan at all)
        self.step = 0  # which of between's three steps comes next
        self.last = np.nan  # the last interpolated value

    def __call__(self, value: float) -> bool:
        if self.budget is None:
            return self.checker.feasible(self.edit(value))
        path, criterion, limit = self.budget
        result = self.checker.cheapest(self.edit(value) | {path: None}, criterion)
        if result is None:
            return False
        cost = np.inf if result.plan is None else float(getattr(result.plan, criterion))
        self.cost[value] = cost
        if cost <= limit:
            return True
        if cost > limit * (1 + COST_CHECK_TOL):
            return False
        return self.checker.feasible(self.edit(value))

    def between(self, low: float, high: float) -> float:
        """The next value to try between ``low`` (no plan) and ``high`` (a plan). With both ends' costs known,
        in turn: where the cost meets the budget on the line through them (kept a twentieth of the bracket
        inside it); then the value within REL of the end that point became, which closes the bracket when the
        threshold lies between them; then the midpoint (so a cost that jumps still halves the bracket). The
        midpoint otherwise."""
        c_low, c_high = self.cost.get(low), self.cost.get(high)
        step, self.step = self.step, (self.step + 1) % 3
        if self.budget is None or c_low is None or c_high is None or not np.isfinite(c_low) or step == 2:
            self.step = 0
            return (low + high) / 2
        if step == 1:
            end, towards = (low, high) if low == self.last else (high, low)
            return float(end + np.sign(towards - end) * 0.99 * REL * abs(end))
        share = min(max((c_low - self.budget[2]) / max(c_low - c_high, 1e-300), 0.05), 0.95)
        self.last = float(low + share * (high - low))
        return self.last


def _budget(inst: Instance) -> tuple[str, str, float] | None:
    """(path, cost criterion, limit) of the budget a probe lifts: the total one when both are set."""
    budgets = [s for s in set_limits(inst, binds=limits.WHOLE_PLAN) if s.limit.criterion is not None]
    budgets.sort(key=lambda s: s.limit.criterion != "total_cost")
    if not budgets:
        return None
    return budgets[0].path, str(budgets[0].limit.criterion), float(budgets[0].value)


def _deadline(checker: Feasibility, f: Finding, search: bool) -> Finding:
    """The deadline: the shortest makespan of any plan is its exact threshold, and a makespan solve under any
    deadline that admits a plan finds it. While no pair passes, the closed form first (exact when a plan
    exists there); with count_startup, where the screen's makespans are lower bounds short of the fill and
    U(m), then the closed form widened by 0.4 %, 1.6 %, 6.4 % (a far smaller grid of pairs, each with its
    group counts, than the loosest's); then the loosest (``top``). While pairs pass, whole plans are what
    the limits cut and the closed form is no better a guess than any: the loosest at once. A closed form read
    off a coarsened grid (``exact_values`` False) is an upper bound: the solve's shortest makespan is the answer."""
    cand, inst = f.cand, checker.base
    tries = [cand.top]
    if search and cand.values.size and not cand.passing:
        first = float(cand.values[0])
        widened = [first * (1 + 4 * REL * 4**k) for k in range(EARLY_STEPS + 1)] if inst.counts_startup else []
        tries = [first] + [d for d in widened if d < cand.top] + tries
    below = cand.current  # a deadline known to have no plan
    for deadline in tries:
        if inst.counts_startup and deadline == cand.top:
            # the loosest deadline's table lists every group count of a far longer grid (MODEL §8): first
            # close in on the threshold by feasibility probes, each pair's fewest groups alone, then solve there
            narrowed = _narrow_deadline(checker, cand, below, deadline)
            if narrowed is None:
                return f
            below, deadline = narrowed
            if checker.spent():
                f.bracket = (below, deadline)
                return f
        result = checker.shortest(edit_of(inst, cand, deadline))
        if result is None or result.plan is None:
            continue
        if deadline == tries[0] and len(tries) > 1 and cand.exact_values:
            return _found(f, deadline, True, "closed form, confirmed by one solve")
        how = "lifted" if deadline == cand.top else f"at {deadline:,.0f} s"
        return _found(f, result.plan.makespan_s, True, f"shortest makespan with the deadline {how}")
    return f


NARROW = 16 * REL  # a deadline bracket this narrow (relative) holds a table about as small as the widened tries'


def _narrow_deadline(checker: Feasibility, cand, below: float, top: float) -> tuple[float, float] | None:
    """(no plan, a plan) deadlines, ``top`` narrowed towards ``below`` by bisection over feasibility probes until
    within NARROW of each other (or the budget ends it); None when ``top`` has no plan either."""
    inst = checker.base
    if not checker.feasible(edit_of(inst, cand, top)):
        return None
    while top - below > NARROW * top and not checker.spent():
        mid = (below + top) / 2
        below, top = (below, mid) if checker.feasible(edit_of(inst, cand, mid)) else (mid, top)
    return below, top


def _whole_plan(checker: Feasibility, f: Finding, search: bool) -> Finding:
    """A node or VM cap (one more, else a bisection up to the count a plan uses with it lifted) or a budget
    (exact: the least cost of any plan once it is lifted)."""
    cand = f.cand
    limit = set_limit(checker.base, cand.path)
    assert limit is not None, cand.path  # a whole-plan finding is made from the instance's own limits
    criterion, counted = limit.limit.criterion, limit.limit.counts
    if criterion is not None:
        result = checker.cheapest({cand.path: None}, criterion)
        if result is None or result.plan is None:
            return f
        return _found(f, getattr(result.plan, criterion), True, f"least {criterion} with the budget lifted")
    edit = lambda value: edit_of(checker.base, cand, value)  # noqa: E731
    if search and checker.feasible(edit(cand.current + 1)):
        return _found(f, cand.current + 1, True, "one more, confirmed by one solve")
    result = checker.shortest({cand.path: None})
    if result is None or result.plan is None:
        return f
    counts = getattr(result.plan, str(counted))
    used = float(max(next((c.count for c in counts if c.type == limit.item), 0), cand.current + 1))
    if not search:
        return _found(f, used, False, "a plan with it lifted uses this many (not searched)")
    return _bisect(checker, f, cand.current + 1, used, Probe(checker, f, edit))


def _bisect(checker: Feasibility, f: Finding, low: float, high: float, probe: Probe) -> Finding:
    """Bisection between ``low`` (no plan) and ``high`` (a plan) over re-solves."""
    cand = f.cand
    close = (lambda lo, hi: abs(hi - lo) <= 1) if cand.integer else (lambda lo, hi: abs(hi - lo) <= REL * abs(hi))
    while not close(low, high) and not checker.spent():
        mid = probe.between(low, high)
        if cand.integer:
            mid = float(np.floor(mid)) if cand.raise_ else float(np.ceil(mid))
            if mid in (low, high):
                break
        low, high = (low, mid) if probe(mid) else (mid, high)
    if not close(low, high):
        f.bracket = (float(low), float(high))
        return f
    exact = cand.integer
    how = "bisection over re-solves" + (", led by the least cost with the budget lifted" if probe.budget else "")
    return _found(f, high, exact, how + ("" if exact else f", to {REL:.1%}"))


def _found(f: Finding, value: float, exact: bool, method: str) -> Finding:
    f.value, f.exact, f.method = float(value), exact, method
    f.rank = (*f.rank[:2], f.relative())
    return f
