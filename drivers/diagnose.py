"""Why an instance has no plan: which constraint families conflict, and the smallest single change to
each main input that restores feasibility (found by bisection over re-solves of one reusable model)."""

from __future__ import annotations

import math
from typing import Callable

from models.edits import edited
from models.instance import AmdahlLaw, Instance, InverseLaw
from models.load import InstanceError
from models.result import Result
from solver.pairs import TableCache, build as build_pairs
from solver.solve import Planner

REL = 1e-3  # bisection stops when the bracket is this narrow, relative to its feasible end
FAMILY_TEXT = {
    "deadline": "deadline (n·L + extra_time ≤ deadline on the cadence grid)",
    "update_time": "update time (no admissible group count keeps up)",
    "max_mean_gap": "mean version gap limit",
    "max_exceedance": "exceedance limit",
    "max_group_drop": "group drop limit",
    "effective_intake": "effective intake (every group dropped)",
    "pool_capacity": "throughput vs pool capacity (the pools cannot supply the token demand)",
}


class Feasibility:
    """Re-solves edited copies of one instance, reusing one model while the structure allows."""

    def __init__(self, base: Instance):
        self.base = base
        self._planner = None
        self._cache = TableCache()  # the edited copies share most of the base's pair quantities
        self.solves = 0

    def solve(self, changes: dict, objective: str = "makespan", time_limit: float | None = None):
        """The result of the edited instance (None when the edit makes it invalid)."""
        try:
            inst = edited(self.base, changes)
        except InstanceError:
            return None
        if self._planner is None or not self._planner.retarget(inst):
            self._planner = Planner(inst, reusable=True, cache=self._cache)
        self.solves += 1
        return self._planner.solve(objective, time_limit=time_limit)

    def feasible(self, changes: dict) -> bool:
        result = self.solve(changes)
        return result is not None and result.plan is not None


def diagnosed(inst: Instance, result: Result, depth: str = "full", notes: list[str] = ()) -> Result:
    """``result`` with its diagnosis attached when it is infeasible (unchanged otherwise); ``notes`` (the
    loader's warnings about units, say) are kept in the diagnosis beside the suggested changes."""
    if result.status != "infeasible":
        return result
    diagnosis = diagnose(inst, build_pairs(inst), result.objective, depth)
    if notes:
        diagnosis["notes"] = list(notes)
    return result.model_copy(update={"diagnosis": diagnosis})


def diagnose(inst: Instance, pairs, objective: str, depth: str = "full") -> dict:
    """{"conflict": text, "rejected_pairs": {family: count}, "relaxations": [...], "changes": [...]}.

    ``depth``: "brief" (the per-pair counts, no re-solve), "conflict" (+ which single relaxation
    restores a plan), "full" (+ the smallest change to each main input).
    """
    checker = Feasibility(inst)
    out: dict = {"rejected_pairs": dict(pairs.rejected)}
    if pairs.size == 0:
        cut = sorted(pairs.rejected.items(), key=lambda kv: -kv[1])
        families = ", ".join(f"{FAMILY_TEXT.get(f, f)}: {n}" for f, n in cut) or "the grid is empty"
        total = pairs.grid_points * inst.freshness.max_versions_kept
        out["conflict"] = f"no (cadence, K) pair of {total:,} passes the per-pair checks; cut by {families}"
    else:
        out["conflict"] = (f"{pairs.size:,} (cadence, K) pairs pass the per-pair checks, but none fits its pools, "
                           f"sandbox nodes and budgets together")
    if depth == "brief":
        return out
    out["relaxations"] = [name for name, changes in _relaxations(inst) if checker.feasible(changes)]
    if out["relaxations"]:
        out["conflict"] += "; relaxing any one of these alone restores a plan: " + ", ".join(out["relaxations"])
    else:
        out["conflict"] += "; no single family relaxed alone restores a plan"
    if depth == "full":
        out["changes"] = [c for c in _changes(inst, checker) if c is not None]
    out["solves"] = checker.solves
    return out


def _relaxations(inst: Instance) -> list[tuple[str, dict]]:
    """Each constraint family switched off (or made very loose) by an edit, one at a time."""
    out = [("deadline", {"schedule.deadline": inst.schedule.deadline * 100})]
    out.append(("throughput", {f"inference.shapes[{i}].tokens_per_gpu_s": s.tokens_per_gpu_s * 1000
                               for i, s in enumerate(inst.inference.shapes)}))
    out.append(("pool_capacity", {f"gpu_pools[{i}].gpus": p.gpus * 100 for i, p in enumerate(inst.gpu_pools)}))
    law = inst.training.update_time
    if isinstance(law, (InverseLaw, AmdahlLaw)):
        out.append(("update_time", {"training.update_time.reference_time": law.reference_time * 1e-6}))
    fr = inst.freshness
    limits = {f"freshness.{k}": None for k in ("max_mean_gap", "max_exceedance", "max_group_drop")
              if getattr(fr, k) is not None}
    if limits:
        out.append(("freshness limits", limits))
    if fr.overrun_policy == "drop":
        out.append(("group drops (overrun_policy: downweight)", {"freshness.overrun_policy": "downweight"}))
    budgets = {f"limits.{k}": None for k in ("max_hourly_cost", "max_total_cost") if getattr(inst.limits, k) is not None}
    if budgets:
        out.append(("budgets", budgets))
    env = inst.environment
    caps = {f"environment.node_types[{i}].max_nodes": None for i, k in enumerate(env.node_types) if k.max_nodes is not None}
    caps |= {f"environment.cloud.vm_types[{i}].max_vms": None for i, v in enumerate(env.cloud.vm_types)
             if v.max_vms is not None}
    if caps:
        out.append(("node and VM limits", caps))
    return out


def _changes(inst: Instance, checker: Feasibility) -> list[dict | None]:
    out = [_deadline(inst, checker)]
    for i, shape in enumerate(inst.inference.shapes):
        out.append(_grow(checker, f"tokens_per_gpu_s[{shape.name}]", f"inference.shapes[{i}].tokens_per_gpu_s",
                         shape.tokens_per_gpu_s, 64, lambda v, n=shape.name: f"tokens_per_gpu_s ≥ {v:.4g} on shape {n}"))
    for i, pool in enumerate(inst.gpu_pools):
        out.append(_grow(checker, f"gpus[{pool.name}]", f"gpu_pools[{i}].gpus", pool.gpus, 64,
                         lambda v, n=pool.name: f"gpus ≥ {v:,.0f} in pool {n}", integer=True))
    for key, criterion in (("max_hourly_cost", "hourly_cost"), ("max_total_cost", "total_cost")):
        if getattr(inst.limits, key) is not None:
            out.append(_budget(checker, key, criterion))
    fr = inst.freshness
    out.append(_grow(checker, "max_versions_kept", "freshness.max_versions_kept", fr.max_versions_kept, 16,
                     lambda v: f"max_versions_kept ≥ {v:.0f}", integer=True))
    if inst.workload.intake_rate < 1:
        out.append(_grow(checker, "intake_rate", "workload.intake_rate", inst.workload.intake_rate,
                         1 / inst.workload.intake_rate, lambda v: f"intake_rate ≥ {v:.4f}"))
    return out


def _deadline(inst: Instance, checker: Feasibility) -> dict:
    """Exact: the shortest makespan any plan reaches once the deadline is out of the way (the grid's
    points do not depend on the deadline, only how far it reaches)."""
    loose = {"schedule.deadline": inst.schedule.deadline * 64}
    result = checker.solve(loose)
    if result is None or result.plan is None:
        return {"input": "deadline", "change": "deadline: no plan even at 64× the deadline", "value": None}
    span = result.plan.makespan_s
    return {"input": "deadline", "change": f"deadline ≥ {span / 86400:.2f} d ({span:,.0f} s)", "value": span}


def _budget(checker: Feasibility, key: str, criterion: str) -> dict:
    """Exact: the least hourly (or total) cost of any plan once that budget is lifted."""
    result = checker.solve({f"limits.{key}": None}, criterion)
    if result is None or result.plan is None:
        return {"input": key, "change": f"{key}: lifting it alone does not restore a plan", "value": None}
    value = getattr(result.plan, criterion)
    return {"input": key, "change": f"{key} ≥ {value:,.2f}", "value": value}


def _grow(checker: Feasibility, name: str, path: str, start: float, factor: float,
          text: Callable[[float], str], integer: bool = False) -> dict | None:
    """Smallest value above ``start`` (up to start·factor) that makes the instance feasible, by
    doubling then bisection; None-valued 'change' text when even the top is infeasible."""
    def feasible(value: float) -> bool:
        return checker.feasible({path: int(value) if integer else value})

    top = start * factor
    low, high = start, None
    step = start
    while True:
        candidate = min(top, low + step)
        if integer:
            candidate = math.ceil(candidate)
        if feasible(candidate):
            high = candidate
            break
        low = candidate
        if candidate >= top:
            return {"input": name, "change": f"{name}: not feasible even at {_fmt(top, integer)} (this input alone cannot restore a plan)",
                    "value": None}
        step *= 2
    while high - low > (1 if integer else REL * high):
        mid = (low + high) / 2
        if integer:
            mid = math.floor(mid)
            if mid <= low:
                break
        if feasible(mid):
            high = mid
        else:
            low = mid
    return {"input": name, "change": text(high), "value": high}


def _fmt(value: float, integer: bool) -> str:
    return f"{value:,.0f}" if integer else f"{value:,.6g}"
