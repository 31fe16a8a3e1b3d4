"""The verifier's reading of MODEL.md §3.1 (pools), §4 (costs) and §3.8 (budgets): the rows every regime's plan
meets alike, from its decisions and its instance alone (imports nothing of solver/ but this folder)."""

from __future__ import annotations

import math

from trainground.models.instance import Instance
from trainground.models.result import Plan
from trainground.solver.verify.check import BINDING_TOL, COST_TOL, REL_TOL, Check
from trainground.solver.verify.hosts import _counts


def check_pools(inst: Instance, plan: Plan, out: Check) -> dict[str, int]:
    """MODEL §3.1: Σ_{s in pool} x_s·g_s + [training pool] m·gpus_per_group <= gpus, per pool [GPUs].
    Returns the GPUs used per pool (also what the plan's ``pools`` must report)."""
    shapes = {s.name: s for s in inst.inference.shapes}
    used = {p.name: 0 for p in inst.gpu_pools}
    for r in plan.inference:
        used[shapes[r.shape].pool] += r.replicas * shapes[r.shape].gpus_per_replica
    used[inst.training.pool] += plan.training_groups * inst.training.gpus_per_group
    reported = {p.pool: (p.gpus_used, p.gpus) for p in plan.pools}
    for pool in inst.gpu_pools:
        if used[pool.name] > pool.gpus:
            out.violations.append(f"pool_capacity[{pool.name}]: {used[pool.name]} GPUs used > {pool.gpus}")
        if reported.get(pool.name) != (used[pool.name], pool.gpus) or len(plan.pools) != len(inst.gpu_pools):
            out.violations.append(
                f"pools[{pool.name}]: plan reports {reported.get(pool.name)}, "
                f"recomputed ({used[pool.name]}, {pool.gpus}) (used, size)"
            )
        smallest = min((s.gpus_per_replica for s in shapes.values() if s.pool == pool.name), default=math.inf)
        if pool.gpus - used[pool.name] < smallest:
            out.binding.append(f"pool_capacity[{pool.name}]")
    return used


def check_costs(inst: Instance, plan: Plan, makespan: float, used: dict[str, int], out: Check) -> tuple[float, float]:
    """MODEL §4 [$/h, $]: GPU = Σ_pools gpu_hour_cost · (the pool's gpus if billing is reserved, else the
    GPUs used); node = Σ_k N_k·hour_cost_k; VM = Σ_v V_v·hour_cost_v·billed_fraction_v; hourly their sum;
    total = hourly·T/3600, T the plan's makespan. Returns (hourly, hourly·``makespan``/3600), ``makespan`` the T
    recomputed by the caller (which checks the plan's against it)."""
    env = inst.environment
    nodes, vms = _counts(plan)
    gpu = math.fsum(p.gpu_hour_cost * (p.gpus if p.billing == "reserved" else used[p.name]) for p in inst.gpu_pools)
    node = math.fsum(k.hour_cost * nodes.get(k.name, 0) for k in env.node_types)
    vm = math.fsum(v.hour_cost * v.billed_fraction * vms.get(v.name, 0) for v in env.cloud.vm_types)
    hourly = gpu + node + vm
    total = hourly * plan.makespan_s / 3600.0
    for name, mine, theirs in (
        ("cost_terms.gpu", gpu, plan.cost_terms.gpu),
        ("cost_terms.node", node, plan.cost_terms.node),
        ("cost_terms.vm", vm, plan.cost_terms.vm),
        ("hourly_cost", hourly, plan.hourly_cost),
        ("total_cost", total, plan.total_cost),
    ):
        if not abs(mine - theirs) <= COST_TOL * max(1.0, abs(mine)):
            out.violations.append(f"{name}: plan says {theirs:.10g}, recomputed {mine:.10g}")
    return hourly, hourly * makespan / 3600.0


def check_budgets(inst: Instance, hourly: float, total: float, out: Check) -> None:
    """MODEL §3.8 (each only if set): hourly_cost <= max_hourly_cost, total_cost <= max_total_cost."""
    limits = inst.limits
    for name, limit, value in (
        ("max_hourly_cost", limits.max_hourly_cost, hourly),
        ("max_total_cost", limits.max_total_cost, total),
    ):
        if limit is None:
            continue
        if not value <= limit * (1 + REL_TOL):
            out.violations.append(f"{name}: {value:.6g} > {limit:g}")
        if value >= limit * (1 - BINDING_TOL):
            out.binding.append(name)
