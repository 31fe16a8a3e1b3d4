"""Every limit of an instance as a candidate change of a diagnosis (:class:`Finding`), ranked, with the
text a change is printed as. The limits that cut (cadence, K) pairs get their closed-form candidates
from :mod:`drivers.diagnosis.candidates`; node and VM caps and budgets, which act on whole plans, have none
(:mod:`drivers.diagnosis.thresholds` searches them by re-solves).
"""

from __future__ import annotations

import numpy as np

from trainground.drivers.diagnosis import candidates as cd
from trainground.drivers.diagnosis import screen as sc
from trainground.drivers.diagnosis.candidates import Candidates
from trainground.models import limits
from trainground.models.instance import Instance
from trainground.models.limits import set_limits
from trainground.solver.laws import calculus as calc
from trainground.solver.table.pairs import TableCache
from trainground.solver.tolerances import PRINT_TOL, REL_TOL

WHOLE_PLAN = "sandboxes and budgets"  # the family of the limits that act on whole plans, not on pairs


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
        self.too_large = False  # unsettled: a re-solve's table would have held more rows than a table may

    @property
    def cand(self) -> Candidates:
        if self._cand is None:
            self._cand = Candidates(**{**self._make().__dict__, "passing": self.passing})
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


def findings_of(inst: Instance, cache: TableCache, base: sc.Screen, cut: dict[str, int]) -> list[Finding]:
    """Every limit of ``inst`` as a candidate change, ranked; its closed-form candidates are computed when first
    read (a pair search reads only the few it tries)."""
    fr, t, everything = inst.freshness, inst.training, tuple(sc.FAMILIES)
    levers = ("max_mean_gap", "max_exceedance", "max_group_drop", "pool_capacity", "effective_intake")
    out = [
        Finding(name, (name,), True, lambda n=name: cd.freshness_limit(base, n))
        for name in sc.FRESHNESS
        if getattr(fr, name) is not None
    ]
    out.append(Finding("deadline", everything, True, lambda: cd.deadline(inst, cache)))
    c = inst.schedule.cadence
    if c.max is not None and c.max < calc.deadline_pace(inst) * (1 - REL_TOL):
        out.append(Finding("cadence.max", everything, False, lambda: cd.cadence_max(inst, cache)))
    if cd.cadence_min_room(inst):
        out.append(Finding("cadence.min", everything, False, lambda: cd.cadence_min(inst, cache)))
    out.append(Finding("max_versions_kept", levers[1:], False, lambda: cd.versions_kept(inst, cache, base)))
    if t.max_groups is not None:
        out.append(Finding("max_groups", ("update_time", "pool_capacity"), True, lambda: cd.max_groups(inst, cache)))
    for i, pool in enumerate(inst.gpu_pools):
        own = ("pool_capacity", "update_time") if pool.name == t.pool else ("pool_capacity",)
        out.append(Finding(f"gpus[{pool.name}]", own, True, lambda i=i: cd.pool_size(inst, cache, i)))
    out += [
        Finding(
            f"tokens_per_gpu_s[{s.name}]", ("pool_capacity",), True, lambda j=j: cd.tokens_per_gpu_s(inst, cache, j)
        )
        for j, s in enumerate(inst.inference.shapes)
    ]
    out += [
        Finding(name, ("pool_capacity",), False, lambda n=name: cd.supply_scale(inst, cache, n))
        for name, value in (("availability", inst.inference.availability), ("intake_rate", inst.workload.intake_rate))
        if value < 1
    ]
    out.append(Finding("occupancy_scale", levers, False, lambda: cd.occupancy_scale(inst, cache, base)))
    passing = bool(base.passing().any())
    top = None if not passing else np.inf  # no pair passes: a whole-plan limit cannot help (closed form)
    whole = [
        Candidates(s.finding_name, s.path, s.value, np.zeros(0), integer=s.limit.kind == "count", top=top)
        for s in set_limits(inst, binds=limits.WHOLE_PLAN)
    ]
    out += [Finding(w.input, (WHOLE_PLAN,), True, lambda w=w: w) for w in whole]
    for f in out:  # pairs pass already: the whole-plan limits are what cuts, every pair
        counts = [
            (base.entries if passing else 0) if x == WHOLE_PLAN else 0 if passing else cut.get(x, 0) for x in f.families
        ]
        f.rank = (-max(counts), 0 if f.direct and counts[0] == max(counts) else 1)
        f.passing = passing
    return out


def change_entry(f: Finding) -> dict:
    """One entry of "changes": {"input", "change", "value"} (MODEL §6) and this project's extra keys."""
    return {
        "input": f.input,
        "change": text(f),
        "value": f.value,
        "exact": f.exact,
        "method": f.method,
        "family": f.families[0],
        "relative_change": f.relative() if np.isfinite(f.relative()) else None,
    }


def text(f: Finding, value: float | None = None) -> str:
    value = f.value if value is None else value
    sign = "≥" if f.cand.raise_ else "≤"
    if f.input == "deadline":
        return f"deadline ≥ {value / 86400:.4g} d ({fmt(f, value)} s)"
    if f.input == "occupancy_scale":
        return f"every sandbox lifetime × {fmt(f, value)} or shorter"
    return f"{f.input} {sign} {fmt(f, value)}"


def fmt(f: Finding, value: float) -> str:
    """The value rounded in the direction that keeps the printed figure on the feasible side."""
    if f.cand.integer or abs(value) >= 1000:
        return f"{np.ceil(value - PRINT_TOL) if f.cand.raise_ else np.floor(value + PRINT_TOL):,.0f}"
    digits = 5 - int(np.floor(np.log10(abs(value)))) - 1 if value else 5
    scale = 10.0**digits
    rounded = (
        np.ceil(value * scale - PRINT_TOL) / scale if f.cand.raise_ else np.floor(value * scale + PRINT_TOL) / scale
    )
    return f"{rounded:.{max(digits, 0)}f}"
