"""What a confidence plan holds beyond the deterministic optimum, and which need binds in its worst scenarios
(MODEL.md §9): the comparison `solve --confidence` prints beside the plan. No pyomo."""

from __future__ import annotations

import numpy as np

from trainground.models.instance import Instance
from trainground.models.result import Plan
from trainground.solver.tolerances import REL_TOL
from trainground.solver.uncertainty import scenarios as sc
from trainground.solver.uncertainty.deadline import at_deadline
from trainground.solver.uncertainty.hosts import room


def what_drove(
    inst: Instance,
    plan: Plan,
    deterministic: Plan | None,
    scen: sc.Scenarios,
    worst: float = 0.1,
    allowance: float = 0.0,
) -> dict:
    """What the confidence plan holds beyond the deterministic optimum (decision deltas), and, over the
    ``worst`` share of the scenarios ``scen`` (the smallest margin over the three needs), how often each
    need is the tightest, with the factors that reach it; ``late``: scenarios with a margin below 1."""
    margins = need_margins(inst, plan, scen, allowance)
    tight = np.nanmin(np.stack(list(margins.values())), axis=0)
    count = max(1, int(round(worst * tight.size)))
    worst_rows = np.argsort(tight, kind="stable")[:count]
    names = list(margins)
    binding = np.argmin(np.stack([margins[n][worst_rows] for n in names]), axis=0)
    return {
        "deltas": plan_deltas(plan, deterministic) if deterministic is not None else {},
        "worst": count,
        "binding": {n: int((binding == i).sum()) for i, n in enumerate(names)},
        "factors": factors_by_need(inst),
        "late": int((tight < 1.0 - REL_TOL).sum()),
        "scenarios": int(tight.size),
    }


def need_margins(inst: Instance, plan: Plan, scen: sc.Scenarios, allowance: float = 0.0) -> dict[str, np.ndarray]:
    """(S,) per need, what the plan holds over what the scenario asks at its deadline pace (1 = exactly)."""
    at = at_deadline(inst, scen, [plan.versions_kept], allowance, plan.training_groups)
    replicas = np.array([next(r.replicas for r in plan.inference if r.shape == s.name) for s in inst.inference.shapes])
    supply = at.supply_per_replica[:, 0, :] @ replicas
    update = np.nan_to_num(sc.update_time(inst, scen, plan.training_gpus), nan=np.inf)
    hosts = room(inst, plan, scen, sc.values_of(inst, scen).peak_to_mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        return {
            "token supply": supply / at.token_demand[:, 0],
            "update time": at.pace[:, 0] / update,
            "sandbox hosts": hosts / at.level[:, 0],
        }


def factors_by_need(inst: Instance) -> dict[str, list[str]]:
    """The factors whose paths enter each need (token supply: demand, throughput, lifetimes via drops,
    availability; update time: the update law; sandbox hosts: lifetimes and demand; the schedule and MODEL
    §13's figures move the deadline pace, which every need is read at)."""
    reach = {
        "token supply": (
            "inference.",
            "workload.",
            "environment.occupancy",
            "freshness.",
            "schedule.",
            "reliability.",
            "gpu_pools",
        ),
        "update time": ("training.", "schedule.", "reliability."),
        "sandbox hosts": (
            "environment.occupancy",
            "workload.",
            "environment.peak_to_mean",
            "schedule.",
            "reliability.",
        ),
    }
    factors = inst.uncertainty.factors if inst.uncertainty is not None else []
    return {
        need: [f.name for f in factors if any(p.startswith(prefixes) for p in f.paths)]
        for need, prefixes in reach.items()
    }


def plan_deltas(plan: Plan, base: Plan) -> dict[str, int | float]:
    """Decisions of ``plan`` minus those of ``base``, in the instance's names (zero deltas left out)."""
    out: dict[str, int | float] = {}
    for r in plan.inference:
        out[f"replicas {r.shape}"] = r.replicas - next((b.replicas for b in base.inference if b.shape == r.shape), 0)
    out["training groups"] = plan.training_groups - base.training_groups
    for kind, mine, theirs in (("nodes", plan.local_nodes, base.local_nodes), ("VMs", plan.cloud_vms, base.cloud_vms)):
        for c in mine:
            out[f"{kind} {c.type}"] = c.count - next((b.count for b in theirs if b.type == c.type), 0)
    out["cadence_s"] = plan.cadence_s - base.cadence_s
    out["versions kept"] = plan.versions_kept - base.versions_kept
    out["total_cost"] = plan.total_cost - base.total_cost
    return {k: v for k, v in out.items() if v}
