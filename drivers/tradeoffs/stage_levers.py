"""The levers of a staged plan (MODEL.md §12), stage by stage: what one more unit of a binding capacity buys.

For each stage and each capacity row that binds there — ``throughput`` (one more replica of the stage's
best shape per dollar), ``update_time`` (one more training group), ``sandbox_nodes[k]`` (one more node
of type k) — the stage's plan is given that unit and its shortest cadence on its grid is read off the
closed forms: the smallest cadence at which rows 2, 3, 5, 6 and 7 of §3 hold with the stage's values
and the changed counts (:func:`solver.uncertainty.scenarios.evaluate` at the nominal values, with the stage's grid
bottom as the pacing floor), rounded up to the grid. What the unit buys is ``n_p·(L_p - L'_p)``: the
time the stage's iterations save, every other stage as planned (no re-solve). A unit that does not fit
its pool says so; one that moves no cadence buys 0 s (another row binds at the same cadence).

Nothing here prints; :mod:`render.stages` phrases the levers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.models.result import Count, Plan, Result
from trainground.models.stage_rules import stage_instance, stage_rows_instance
from trainground.solver.laws import calculus as calc
from trainground.solver.uncertainty import scenarios as sc

ROWS = ("throughput", "update_time", "sandbox_nodes")


@dataclass(frozen=True)
class StageLever:
    """One unit more of what binds in one stage, and the time it buys there."""

    stage: str
    row: str  # the binding row, as the plan names it (e.g. "sandbox_nodes[standard]")
    change: str  # e.g. "+1 tp8 replica"
    hourly_cost: float  # $/h the unit adds
    cadence_s: float  # the stage's cadence in the plan
    faster_cadence_s: float | None  # its shortest grid cadence with the unit (None: the unit does not fit)
    buys_s: float | None  # n_p·(L_p - L'_p), s (None: the unit does not fit)

    def to_json(self) -> dict:
        return asdict(self)


def stage_levers(inst: Instance, result: Result) -> list[StageLever]:
    """Every stage lever of ``result``'s staged plan, stage by stage, in the order the rows bind."""
    plan = result.plan
    if inst.stages is None or plan is None or not plan.stages:
        return []
    out = []
    for stage, row in zip(inst.stages.list, plan.stages):
        part = row.plan
        if part is None:
            continue
        for binding in row.binding:
            family = binding.split("[")[0]
            if family not in ROWS:
                continue
            unit = _unit(inst, part, binding)
            if unit is None:
                continue
            changed, change, hourly, fits = unit
            faster = _shortest(inst, stage, changed) if fits else None
            buys = None if faster is None else max(0.0, stage.iterations * (part.cadence_s - faster))
            out.append(StageLever(stage.name, binding, change, hourly, part.cadence_s, faster, buys))
    return out


def _unit(inst: Instance, plan: Plan, binding: str) -> tuple[Plan, str, float, bool] | None:
    """(the plan with one unit more, what the unit is, its $/h, whether it fits its pool)."""
    family = binding.split("[")[0]
    prices = {p.name: p.gpu_hour_cost for p in inst.gpu_pools}
    free = {p.pool: p.gpus - p.gpus_used for p in plan.pools}
    if family == "throughput":
        shape = _best_shape(inst, plan)
        grown = [
            r.model_copy(update={"replicas": r.replicas + 1, "gpus": r.gpus + shape.gpus_per_replica})
            if r.shape == shape.name
            else r
            for r in plan.inference
        ]
        changed = plan.model_copy(update={"inference": grown})
        hourly = shape.gpus_per_replica * prices[shape.pool]
        return changed, f"+1 {shape.name} replica", hourly, free.get(shape.pool, 0) >= shape.gpus_per_replica
    if family == "update_time":
        t = inst.training
        changed = plan.model_copy(
            update={
                "training_groups": plan.training_groups + 1,
                "training_gpus": plan.training_gpus + t.gpus_per_group,
            }
        )
        top = calc.group_range(inst)[1]
        fits = free.get(t.pool, 0) >= t.gpus_per_group and plan.training_groups + 1 <= top
        return changed, "+1 training group", t.gpus_per_group * prices[t.pool], fits
    name = binding[len("sandbox_nodes[") :].split(",")[0].rstrip("]")
    node = next((k for k in inst.environment.node_types if k.name == name), None)
    if node is None:
        return None
    counts = [Count(type=c.type, count=c.count + (c.type == name)) for c in plan.local_nodes]
    fits = node.max_nodes is None or next(c.count for c in counts if c.type == name) <= node.max_nodes
    return plan.model_copy(update={"local_nodes": counts}), f"+1 {name} node", node.hour_cost, fits


def _best_shape(inst: Instance, plan: Plan):
    """The shape the stage runs that gives the most tokens/s per $ at the plan's K (any shape if it runs none)."""
    used = {r.shape for r in plan.inference if r.replicas > 0}
    prices = {p.name: p.gpu_hour_cost for p in inst.gpu_pools}

    def value(s) -> float:
        rate = s.tokens_per_gpu_s * float(calc.supply_multiplier(s.version_slowdown, plan.versions_kept))
        return rate / max(prices[s.pool], 1e-12)

    shapes = [s for s in inst.inference.shapes if s.name in used] or list(inst.inference.shapes)
    return max(shapes, key=value)


def _shortest(inst: Instance, stage, plan: Plan) -> float | None:
    """The stage's shortest grid cadence at which its rows hold with ``plan``'s counts (None: none)."""
    si = stage_instance(inst, stage)
    grid = calc.cadence_grid(stage_rows_instance(inst, stage))
    if grid.size == 0:
        return None
    floor = plan.model_copy(update={"cadence_s": float(grid[0])})
    nominal = sc.Scenarios((), np.ones((1, 0)), {}, None)
    found = float(sc.evaluate(si, floor, nominal).cadence[0])
    at = np.flatnonzero(grid >= found * (1 - 1e-12))
    return float(grid[at[0]]) if at.size else None
