"""The logged run's own configuration as a plan (what `simulate --plan` replays): its inference GPUs per pool
as replicas of the pool's shape, its training GPUs (the reference count of the update law) as groups, the
instance's versions kept, sandbox nodes for its peak, and the cadence whose attempt rate is the one the
run launched at (MODEL §2: R = B / (L · p_eff); the cadence a plan states sets its launches, the cadence
a run achieves is an outcome, which the replay is then compared with) — or the first grid cadence above
it, within MAX_STEPS steps, at which the configuration passes every check.

The plan is checked by the independent verifier (solver/verify/plan.py) before it is returned; its makespan,
costs and placement come from the verifier's laws (solver/verify/laws.py), so a plan this writes is one
`simulate --plan` accepts.
"""

from __future__ import annotations

import math

from trainground.calibrate.fit import Calibration
from trainground.models.instance import Instance
from trainground.models.result import CostTerms, Count, Placement, Plan, PoolUse, ShapeReplicas
from trainground.solver.verify import laws as laws
from trainground.solver.verify.plan import resource_rows, verify_plan

MAX_STEPS = 50  # grid steps above the logged launch rate's cadence tried before the plan is given up


def logged_plan(inst: Instance, cal: Calibration) -> tuple[Plan | None, list[str]]:
    """The plan, or None and why not (each line a reason). The logged run is what ran, not a plan sized to
    hold: it is checked on the steady_state basis (docs/model.md §2–§8), which its file names."""
    if inst.regime is not None and not inst.regime.is_default:
        return None, [
            f"the calibrated instance's regime ({inst.regime.label}) has no logged plan yet (docs/model.md §14): a "
            "logged plan is read as the seed's regime runs (its launch rate); solve the instance for its regime's plan"
        ]
    inst = inst.model_copy(update={"planning": inst.planning.model_copy(update={"basis": "steady_state"})})
    replicas, why = _replicas(inst, cal)
    if why:
        return None, why
    if cal.update is None or cal.cadence is None or cal.cadence.achieved is None:
        return None, ["the step log gives no training GPU count or no cadence"]
    if "attempts_per_s" not in cal.window:
        return None, ["the launch rate is not measured (no steady window)"]
    t = inst.training
    groups = max(t.min_groups, round(cal.update.reference_gpus / t.gpus_per_group))
    cadence = _cadence_of_rate(inst, cal.window["attempts_per_s"], groups)
    step, violations = inst.schedule.cadence.step, []
    for _ in range(MAX_STEPS):
        plan = _plan(inst, replicas, groups, cadence)
        violations = verify_plan(inst, plan).violations
        if not violations:
            return plan, []
        cadence += step
    return None, [f"up to cadence {cadence - step:g} s: {v}" for v in violations]


def _cadence_of_rate(inst: Instance, rate: float, groups: int) -> float:
    """The smallest grid cadence whose attempt rate (MODEL §2: B / (L · p_eff)) is at most the logged one."""
    grid, law = inst.schedule.cadence, laws.law_of(inst.environment.occupancy)
    kept = inst.freshness.max_versions_kept
    guess = inst.workload.batch_trajectories / (rate * inst.workload.intake_rate)
    cadence = grid.min + grid.step * max(0, math.floor((guess - grid.min) / grid.step) - 1)
    while laws.run_at(inst, law, cadence, kept, groups, startup=False).attempts > rate * (1 + 1e-9):
        cadence += grid.step
    return cadence


def _replicas(inst: Instance, cal: Calibration) -> tuple[dict[str, int], list[str]]:
    """Replicas per shape: each logged pool's GPUs on the first shape that pool names, else the pooled GPUs
    on the instance's only shape."""
    from trainground.calibrate.pools import shapes_of

    shapes = [s.model_dump() for s in inst.inference.shapes]
    by_pool = cal.window.get("pool_gpus") or {}
    out = {s.name: 0 for s in inst.inference.shapes}
    if by_pool:
        for pool, gpus in by_pool.items():
            where = shapes_of(pool, shapes)
            if not where:
                return out, [f"pool {pool} of the logs names no shape of the instance"]
            shape = inst.inference.shapes[where[0]]
            out[shape.name] = math.ceil(gpus / shape.gpus_per_replica - 1e-9)
        return out, []
    if "gpus" not in cal.window:
        return out, ["the inference GPUs are not known (--inference-gpus or the step log's inference_gpus)"]
    if len(inst.inference.shapes) != 1:
        return out, ["the logs give pooled inference GPUs and the instance has several shapes: give them per pool"]
    shape = inst.inference.shapes[0]
    out[shape.name] = math.ceil(cal.window["gpus"] / shape.gpus_per_replica - 1e-9)
    return out, []


def _plan(inst: Instance, replicas: dict[str, int], groups: int, cadence: float) -> Plan:
    law = laws.law_of(inst.environment.occupancy)
    kept = inst.freshness.max_versions_kept
    run = laws.run_at(inst, law, cadence, kept, groups, startup=False)
    env = inst.environment
    inflight = {b.name: run.attempts * b.share * run.w_use for b in env.backends}
    peak = {b: e * env.peak_to_mean for b, e in inflight.items()}
    node, count = nodes_for(inst, peak)
    shapes = {s.name: s for s in inst.inference.shapes}
    used = {p.name: 0 for p in inst.gpu_pools}
    for name, x in replicas.items():
        used[shapes[name].pool] += x * shapes[name].gpus_per_replica
    used[inst.training.pool] += groups * inst.training.gpus_per_group
    gpu = math.fsum(p.gpu_hour_cost * (p.gpus if p.billing == "reserved" else used[p.name]) for p in inst.gpu_pools)
    nodes = next(k.hour_cost for k in env.node_types if k.name == node) * count
    hourly = gpu + nodes
    return Plan(
        cadence_s=cadence,
        makespan_s=run.makespan,
        versions_kept=kept,
        age_limit=kept,  # the seed's regime: K bounds a consumed gap (MODEL §14)
        inference=[
            ShapeReplicas(shape=n, pool=shapes[n].pool, replicas=x, gpus=x * shapes[n].gpus_per_replica)
            for n, x in replicas.items()
        ],
        inference_gpus=sum(x * shapes[n].gpus_per_replica for n, x in replicas.items()),
        training_groups=groups,
        training_gpus=groups * inst.training.gpus_per_group,
        local_nodes=[Count(type=node, count=count)],
        cloud_vms=[],
        hourly_cost=hourly,
        total_cost=hourly * run.makespan / 3600.0,
        cost_terms=CostTerms(gpu=gpu, node=nodes, vm=0.0),
        pools=PoolUse.rows(inst.gpu_pools, used),
        placement=Placement(steady={node: inflight}, peak={node: peak}, cloud={}),
    )


def nodes_for(inst: Instance, peak: dict[str, float]) -> tuple[str, int]:
    """The first node type that runs every backend, and how many of it hold the peak under every row."""
    rows = resource_rows(inst)
    for host in inst.environment.node_types:
        if all(b in host.density for b in peak):
            need = max(
                math.fsum(envs * row.load.get(b, 0.0) for b, envs in peak.items()) / row.capacity
                for (kind, name, _), row in rows.items()
                if kind == "node" and name == host.name
            )
            return host.name, max(1, math.ceil(need * (1 + 1e-9)))
    raise ValueError("no node type runs every backend")
