"""Why an instance has no plan, and what restores one: every limit of the instance is a candidate change.

Limits that cut (cadence, K) pairs directly — the freshness limits, the cadence grid's bounds, K,
the deadline, max_groups, and the pool-capacity bound's inputs (pool sizes, tokens/s, availability,
intake) — get closed-form thresholds from the per-pair screen (:mod:`drivers.screen`), each
confirmed by one solve; a re-solve search (bisection over the values the pairs take, or over the
input itself) runs only when that solve finds no plan. Node and VM caps and budgets, which act on
whole plans, are searched by re-solves (a budget exactly, by solving for the least cost). An input
that cannot restore a pair given the families that cut is said to in one line, never searched.
When no single change restores a plan, the cheapest pair of changes among the top families follows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from drivers import screen as sc
from drivers.diagnose_pairs import cheapest_pairs
from drivers.screen import Candidates, edit_of
from models.edits import edited
from models.instance import Instance
from models.load import InstanceError
from models.result import Result
from solver import calculus as calc
from solver.pairs import TableCache
from solver.pairs import build as build_pairs
from solver.solve import Planner
from solver.stopwatch import Stopwatch
from solver.tolerances import REL_TOL

REL = 1e-3  # a search over a continuous input stops when its bracket is this narrow, relative to its feasible end
MAX_SOLVES = 60  # re-solves one diagnosis may spend (deterministic, unlike a time budget)
WHOLE_PLAN = "sandboxes and budgets"  # the family of the limits that act on whole plans, not on pairs
FAMILY_TEXT = {
    "deadline": "deadline",
    "update_time": "update time (no admissible group count keeps up)",
    "max_mean_gap": "max_mean_gap",
    "max_exceedance": "max_exceedance",
    "max_group_drop": "max_group_drop",
    "effective_intake": "effective intake (every group dropped)",
    "pool_capacity": "pool capacity (the pools cannot supply the token demand)",
}


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
        self._planner = None
        self.cache = cache or TableCache(8)  # the edited copies share most of the base's pair quantities
        self.clock = clock
        self.max_solves = max_solves
        self.solves = 0

    def spent(self) -> bool:
        return (self.max_solves is not None and self.solves >= self.max_solves) or (
            self.clock is not None and self.clock.expired()
        )

    def solve(self, changes: dict, objective: str = "makespan", time_limit: float | None = None) -> Result | None:
        """The result of the edited instance (None when the edit makes it invalid, or the budget is spent);
        ``time_limit`` bounds this solve, within what the clock has left."""
        if self.spent():
            return None
        try:
            inst = edited(self.base, changes)
        except InstanceError:
            return None
        if self._planner is None or not self._planner.retarget(inst):
            self._planner = Planner(inst, reusable=True, cache=self.cache)
        self.solves += 1
        left = None if self.clock is None else self.clock.remaining()
        if time_limit is not None:
            left = time_limit if left is None else min(left, time_limit)
        return self._planner.solve(objective, time_limit=left)

    def feasible(self, changes: dict) -> bool:
        result = self.solve(changes)
        return result is not None and result.plan is not None


class Finding:
    """One input's candidate change and what the search for it found: ``value`` restores a plan (None: it
    cannot alone, or the budget ran out first: ``bracket``). Its closed-form candidates are computed by
    ``make`` when first read."""

    def __init__(self, name: str, families: tuple[str, ...], direct: bool, make):
        self.name = name
        self.families = families  # the per-pair families the input acts on, its own first
        self.direct = direct  # the input is its family's own limit (max_mean_gap for the mean gap), not a lever
        self._make, self._cand = make, None
        self.passing = False  # some pair passes every per-pair family already
        self.value: float | None = None
        self.exact = True
        self.method = ""
        self.bracket: tuple[float, float] | None = None  # (no plan, a plan) when the budget cut the search short
        self.rank: tuple = ()
        self.skipped = False  # the solve budget or the time limit ran out before this input was settled

    @property
    def cand(self) -> Candidates:
        if self._cand is None:
            self._cand = sc.Candidates(**{**self._make().__dict__, "passing": self.passing})
        return self._cand

    @property
    def input(self) -> str:
        return self.name

    def relative(self, value: float | None = None) -> float:
        """How far ``value`` (default the found one) moves the input, relative to its current value."""
        value, now = self.value if value is None else value, self.cand.current
        if value is None or not now:
            return np.inf
        return abs(value - now) / abs(now) if self.cand.raise_ else now / value - 1.0


def diagnosed(
    inst: Instance, result: Result, depth: str = "full", clock: Stopwatch | None = None, notes: Sequence[str] = ()
) -> Result:
    """``result`` with its diagnosis attached when it is infeasible (unchanged otherwise); ``notes`` (the
    loader's warnings about units, say) lead the diagnosis's own notes."""
    if result.status != "infeasible":
        return result
    if inst.uncertainty is not None and inst.uncertainty.confidence is not None:
        diagnosis = confidence_diagnosis(inst, result.objective, depth, clock)
    else:
        diagnosis = diagnose(inst, build_pairs(inst), result.objective, depth, clock)
    diagnosis["notes"] = list(notes) + list(diagnosis.get("notes", []))
    if notes:
        diagnosis["unit_notes"] = list(notes)
    return result.model_copy(update={"diagnosis": diagnosis})


def confidence_diagnosis(inst: Instance, objective: str, depth: str, clock: Stopwatch | None = None) -> dict:
    """An infeasible confidence solve (MODEL §9): the deterministic problem's diagnosis when it has no plan
    either, else that its plans are on time too rarely."""
    plain = inst.model_copy(update={"uncertainty": inst.uncertainty.model_copy(update={"confidence": None})})
    if Planner(plain).solve(objective).status == "infeasible":
        return diagnose(plain, build_pairs(plain), objective, depth, clock)
    unc = inst.uncertainty
    return {
        "conflict": f"plans meet every constraint at the nominal values, but none is on time in at least "
        f"{unc.confidence:.1%} of the {unc.samples:,} scenarios (uncertainty.confidence); "
        f"lower the confidence or the uncertainty",
        "confidence": unc.confidence,
    }


def diagnose(inst: Instance, pairs, objective: str, depth: str = "full", clock: Stopwatch | None = None) -> dict:
    """{"conflict", "rejected_pairs", "cut_alone", "relaxations", "changes", "cannot_help", "pairs_of_changes",
    "notes", "solves"} (MODEL §6 names "diagnosis"; the keys past it are this project's).

    ``depth``: "brief" (the per-pair counts, no solve), "conflict" (+ which single inputs restore a plan,
    without searching their thresholds), "full" (+ each input's threshold and, when no single change
    restores a plan, the cheapest pair of changes).
    """
    cache = TableCache(8)
    base = sc.screen(inst, cache)
    cut = base.cut_alone()
    out: dict = {"rejected_pairs": dict(pairs.rejected), "cut_alone": cut}
    out["conflict"] = _conflict(inst, pairs, base, cut)
    if depth == "brief":
        return out
    checker = Feasibility(inst, cache, clock, MAX_SOLVES)
    findings = [_settle(checker, f, search=depth == "full") for f in _findings(inst, cache, base, cut)]
    restoring = sorted((f for f in findings if f.value is not None), key=lambda f: f.rank)
    out["relaxations"] = [f.input for f in restoring]
    cut_short = any(f.skipped for f in findings)
    out["conflict"] += (
        "; any one of these alone restores a plan: " + ", ".join(out["relaxations"])
        if restoring
        else "; the solve budget or time limit ran out before a change was found"
        if cut_short
        else "; no single change restores a plan"
    )
    if depth == "full":
        out["changes"] = [_change(f) for f in restoring]
    helpless = [f for f in findings if f.value is None and f.bracket is None and not f.skipped]
    out["cannot_help"] = [f.input for f in sorted(helpless, key=lambda f: f.rank)]
    notes = []
    if helpless:
        top = ", ".join(f for f, _ in sorted(cut.items(), key=lambda kv: -kv[1]))
        why = (
            " (pairs pass; whole plans are what the limits cut)"
            if base.passing().any()
            else f" (given what cuts the pairs: {top})"
            if top
            else ""
        )
        notes.append(f"cannot restore a plan alone: {', '.join(out['cannot_help'])}{why}")
    skipped = [f.input for f in findings if f.skipped]
    if skipped:
        notes.append(f"not searched (solve budget or time limit spent): {', '.join(skipped)}")
    for f in findings:
        if f.bracket is not None:
            notes.append(
                f"{f.input}: search stopped (solve budget) between {_fmt(f, f.bracket[0])} (no plan) and "
                f"{_fmt(f, f.bracket[1])} (a plan)"
            )
    # a family's own limit that lets its pairs through but restores no plan alone: what else must move with it
    partial = [f for f in findings if f.direct and f.value is None and not f.skipped and f.cand.values.size]
    if depth == "full" and not cut_short and (not restoring or partial):
        out["pairs_of_changes"] = cheapest_pairs(
            inst, partial if restoring else findings, checker, _findings, _settle, _text
        )
    out["notes"] = notes
    out["solves"] = checker.solves
    return out


def _conflict(inst: Instance, pairs, base: sc.Screen, cut: dict[str, int]) -> str:
    if pairs.size:
        return (
            f"{pairs.size:,} (cadence, K) pairs pass the per-pair checks, but none fits its pools, "
            f"sandbox nodes and budgets together"
        )
    if not base.entries:
        return "the cadence grid is empty (cadence.min is above the grid's top)"
    families = ", ".join(f"{FAMILY_TEXT.get(f, f)} {n:,}" for f, n in sorted(cut.items(), key=lambda kv: -kv[1]))
    return (
        f"no (cadence, K) pair of {base.entries:,} passes the per-pair checks; pairs each family cuts "
        f"on its own: {families or 'none (dominated or cut together)'}"
    )


def _findings(inst: Instance, cache: TableCache, base: sc.Screen, cut: dict[str, int]) -> list[Finding]:
    """Every limit of ``inst`` as a candidate change, ranked; its closed-form candidates are computed when first
    read (a pair search reads only the few it tries)."""
    fr, env, t, everything = inst.freshness, inst.environment, inst.training, tuple(sc.FAMILIES)
    levers = ("max_mean_gap", "max_exceedance", "max_group_drop", "pool_capacity", "effective_intake")
    out = [
        Finding(name, (name,), True, lambda n=name: sc.freshness_limit(base, n))
        for name in sc.FRESHNESS
        if getattr(fr, name) is not None
    ]
    out.append(Finding("deadline", everything, True, lambda: sc.deadline(inst, cache)))
    c = inst.schedule.cadence
    if c.max is not None and c.max < calc.deadline_pace(inst) * (1 - REL_TOL):
        out.append(Finding("cadence.max", everything, False, lambda: sc.cadence_max(inst, cache)))
    if sc.cadence_min_room(inst):
        out.append(Finding("cadence.min", everything, False, lambda: sc.cadence_min(inst, cache)))
    out.append(Finding("max_versions_kept", levers[1:], False, lambda: sc.versions_kept(inst, cache, base)))
    if t.max_groups is not None:
        out.append(Finding("max_groups", ("update_time", "pool_capacity"), True, lambda: sc.max_groups(inst, cache)))
    for i, pool in enumerate(inst.gpu_pools):
        own = ("pool_capacity", "update_time") if pool.name == t.pool else ("pool_capacity",)
        out.append(Finding(f"gpus[{pool.name}]", own, True, lambda i=i: sc.pool_size(inst, cache, i)))
    out += [
        Finding(
            f"tokens_per_gpu_s[{s.name}]", ("pool_capacity",), True, lambda j=j: sc.tokens_per_gpu_s(inst, cache, j)
        )
        for j, s in enumerate(inst.inference.shapes)
    ]
    out += [
        Finding(name, ("pool_capacity",), False, lambda n=name: sc.supply_scale(inst, cache, n))
        for name, value in (("availability", inst.inference.availability), ("intake_rate", inst.workload.intake_rate))
        if value < 1
    ]
    out.append(Finding("occupancy_scale", levers, False, lambda: sc.occupancy_scale(inst, cache, base)))
    passing = bool(base.passing().any())
    top = None if not passing else np.inf  # no pair passes: a whole-plan limit cannot help (closed form)
    whole = [
        Candidates(
            f"max_nodes[{k.name}]",
            f"environment.node_types[{i}].max_nodes",
            k.max_nodes,
            np.zeros(0),
            integer=True,
            top=top,
        )
        for i, k in enumerate(env.node_types)
        if k.max_nodes is not None
    ]
    whole += [
        Candidates(
            f"max_vms[{v.name}]",
            f"environment.cloud.vm_types[{i}].max_vms",
            v.max_vms,
            np.zeros(0),
            integer=True,
            top=top,
        )
        for i, v in enumerate(env.cloud.vm_types)
        if v.max_vms is not None
    ]
    whole += [
        Candidates(k, f"limits.{k}", getattr(inst.limits, k), np.zeros(0), top=top)
        for k in ("max_hourly_cost", "max_total_cost")
        if getattr(inst.limits, k) is not None
    ]
    out += [Finding(w.input, (WHOLE_PLAN,), True, lambda w=w: w) for w in whole]
    for f in out:  # pairs pass already: the whole-plan limits are what cuts, every pair
        counts = [
            (base.entries if passing else 0) if x == WHOLE_PLAN else 0 if passing else cut.get(x, 0) for x in f.families
        ]
        f.rank = (-max(counts), 0 if f.direct and counts[0] == max(counts) else 1)
        f.passing = passing
    return out


def _settle(checker: Feasibility, f: Finding, search: bool = True) -> Finding:
    """Find ``f``'s threshold: confirm the closed form by one solve, search by re-solves only when it fails
    (``search`` False: only whether the input restores a plan, at its loosest). A search the budget (or the
    command's time limit) cut short without a plan is marked ``skipped``, never "cannot help"."""
    f = _search(checker, f, search)
    searchable = f.cand.values.size > 0 or f.cand.top is not None
    f.skipped = f.value is None and f.bracket is None and checker.spent() and searchable
    return f


def _search(checker: Feasibility, f: Finding, search: bool) -> Finding:
    cand, inst = f.cand, checker.base
    edit = lambda value: edit_of(inst, cand, value)  # noqa: E731
    if cand.top is None and not cand.values.size:
        return f  # closed form: no pair passes whatever this input is
    if f.families == (WHOLE_PLAN,):
        return _whole_plan(checker, f, search)
    if search and cand.values.size and (cand.steps or not cand.passing) and checker.feasible(edit(cand.values[0])):
        return _found(
            f,
            cand.values[0],
            cand.exact_values,
            "closed form, confirmed by one solve"
            + ("" if cand.exact_values else ", by bisection over the pair screen to 0.1%"),
        )
    loosest = cand.values[-1] if cand.values.size and (cand.steps or cand.top is None) else cand.top
    if cand.input == "deadline":
        loosest = cand.top  # the shortest makespan once the deadline is out of the way is exact
        result = checker.solve(edit(loosest))
        if result is None or result.plan is None:
            return f
        return _found(f, result.plan.makespan_s, True, "shortest makespan with the deadline lifted")
    if not cand.values.size and search:
        return _expand(checker, f, loosest, edit)
    if cand.values.size and not cand.steps and search:
        return _expand(checker, f, loosest, edit, cand.values[0] if not cand.passing else cand.current)
    if checker.spent() or not checker.feasible(edit(loosest)):
        return f
    if search:  # a plan appears only at one of the values the pairs take: gallop, then bisect their list
        low, high, step = 0, cand.values.size - 1, 1
        while low + step < high and not checker.spent():
            if checker.feasible(edit(cand.values[low + step])):
                high = low + step
                break
            low, step = low + step, step * 2
        while high - low > 1 and not checker.spent():
            mid = (low + high) // 2
            low, high = (low, mid) if checker.feasible(edit(cand.values[mid])) else (mid, high)
        if high - low > 1:
            f.bracket = (float(cand.values[low]), float(cand.values[high]))
            return f
        return _found(f, cand.values[high], True, f"search over the {cand.values.size:,} values the pairs take")
    return _found(f, loosest, False, "restores a plan at its loosest (not searched)")


def _expand(checker: Feasibility, f: Finding, loosest: float, edit, start: float | None = None) -> Finding:
    """``loosest`` first (no plan there: the input cannot help alone), then from ``start`` (default the current
    value) towards it by steps of 0.4 %, 1.6 %, 6.4 %, ... until one restores a plan, then bisection inside
    that step: a threshold near the start costs a few solves, not a bisection over the whole range."""
    cand = f.cand
    now = cand.current if start is None else float(start)
    step = max(1.0, 4 * REL * now) if cand.integer else 4 * REL * now
    low = now
    if checker.spent() or not checker.feasible(edit(loosest)):
        return f  # one solve says this input cannot restore a plan alone
    while not checker.spent():
        value = now + step if cand.raise_ else now - step
        if value >= loosest if cand.raise_ else value <= loosest:
            return _bisect(checker, f, low, loosest, edit)
        if checker.feasible(edit(value)):
            return _bisect(checker, f, low, value, edit)
        low, step = value, step * 4
    f.bracket = (float(low), float(loosest))
    return f


def _whole_plan(checker: Feasibility, f: Finding, search: bool) -> Finding:
    """A node or VM cap (one more, else a bisection up to the count a plan uses with it lifted) or a budget
    (exact: the least cost of any plan once it is lifted)."""
    cand = f.cand
    if cand.path.startswith("limits."):
        criterion = cand.input.removeprefix("max_")
        result = checker.solve({cand.path: None}, criterion)
        if result is None or result.plan is None:
            return f
        return _found(f, getattr(result.plan, criterion), True, f"least {criterion} with the budget lifted")
    edit = lambda value: edit_of(checker.base, cand, value)  # noqa: E731
    if search and checker.feasible(edit(cand.current + 1)):
        return _found(f, cand.current + 1, True, "one more, confirmed by one solve")
    result = checker.solve({cand.path: None})
    if result is None or result.plan is None:
        return f
    name = cand.input.split("[")[1].rstrip("]")
    counts = result.plan.local_nodes if cand.input.startswith("max_nodes") else result.plan.cloud_vms
    used = float(max(next((c.count for c in counts if c.type == name), 0), cand.current + 1))
    if not search:
        return _found(f, used, False, "a plan with it lifted uses this many (not searched)")
    return _bisect(checker, f, cand.current + 1, used, edit)


def _bisect(checker: Feasibility, f: Finding, low: float, high: float, edit) -> Finding:
    """Bisection between ``low`` (no plan) and ``high`` (a plan) over re-solves."""
    cand = f.cand
    close = (lambda lo, hi: abs(hi - lo) <= 1) if cand.integer else (lambda lo, hi: abs(hi - lo) <= REL * abs(hi))
    while not close(low, high) and not checker.spent():
        mid = (low + high) / 2
        if cand.integer:
            mid = float(np.floor(mid)) if cand.raise_ else float(np.ceil(mid))
            if mid in (low, high):
                break
        low, high = (low, mid) if checker.feasible(edit(mid)) else (mid, high)
    if not close(low, high):
        f.bracket = (float(low), float(high))
        return f
    exact = cand.integer
    return _found(f, high, exact, "bisection over re-solves" + ("" if exact else f", to {REL:.1%}"))


def _found(f: Finding, value: float, exact: bool, method: str) -> Finding:
    f.value, f.exact, f.method = float(value), exact, method
    f.rank = (*f.rank[:2], f.relative())
    return f


def _change(f: Finding) -> dict:
    """One entry of "changes": {"input", "change", "value"} (MODEL §6) and this project's extra keys."""
    return {
        "input": f.input,
        "change": _text(f),
        "value": f.value,
        "exact": f.exact,
        "method": f.method,
        "family": f.families[0],
        "relative_change": f.relative() if np.isfinite(f.relative()) else None,
    }


def _text(f: Finding, value: float | None = None) -> str:
    value = f.value if value is None else value
    sign = "≥" if f.cand.raise_ else "≤"
    if f.input == "deadline":
        return f"deadline ≥ {value / 86400:.4g} d ({_fmt(f, value)} s)"
    if f.input == "occupancy_scale":
        return f"every sandbox lifetime × {_fmt(f, value)} or shorter"
    return f"{f.input} {sign} {_fmt(f, value)}"


def _fmt(f: Finding, value: float) -> str:
    """The value rounded in the direction that keeps the printed figure on the feasible side."""
    if f.cand.integer or abs(value) >= 1000:
        return f"{np.ceil(value - 1e-9) if f.cand.raise_ else np.floor(value + 1e-9):,.0f}"
    digits = 5 - int(np.floor(np.log10(abs(value)))) - 1 if value else 5
    scale = 10.0**digits
    rounded = np.ceil(value * scale - 1e-9) / scale if f.cand.raise_ else np.floor(value * scale + 1e-9) / scale
    return f"{rounded:.{max(digits, 0)}f}"
