"""A compact staged solution's stages as one-stage plans (:mod:`solver.stages.compact`): each stage's pair, the counts
it has (one capacity under ``fixed``, its own under ``replan``), their costs and its sandbox splits. The run's plan
of them is :func:`solver.stages.plans.run_plan`'s."""

from __future__ import annotations

from trainground.models.result import CostTerms, Count, Placement, Plan, PoolUse, ShapeReplicas
from trainground.solver.mip.assemble import placement
from trainground.solver.stages.compact import CompactModel, counts_of


def part_plans(c: CompactModel, values) -> list[Plan]:
    """Each stage's decisions as a one-stage plan of the instance it runs as (before its own start-up is set), at
    the counts it has (the shared ones under ``fixed``)."""
    inst, ix = c.inst, c.ix
    shapes = inst.inference.shapes
    gpg = inst.training.gpus_per_group
    plans = []
    for p, table in enumerate(c.found.tables):
        got = counts_of(c, values, p)
        row = got["pairs"][p]
        used = {pool.name: 0 for pool in inst.gpu_pools}
        for s in shapes:
            used[s.pool] += got["x"][s.name] * s.gpus_per_replica
        used[inst.training.pool] += got["G"] * gpg
        terms = _cost_terms(c, got)
        hourly = terms.gpu + terms.node + terms.vm
        span = float(table.makespan[row])
        plans.append(
            Plan(
                cadence_s=float(table.cadence[row]),
                makespan_s=span,
                startup_s=float(table.startup[row]) if inst.counts_startup else None,
                versions_kept=int(table.kept[row]),
                age_limit=int(table.kept[row]),  # staged runs plan the seed regime (MODEL §12, §14)
                inference=[
                    ShapeReplicas(
                        shape=s.name, pool=s.pool, replicas=got["x"][s.name], gpus=got["x"][s.name] * s.gpus_per_replica
                    )
                    for s in shapes
                ],
                inference_gpus=sum(got["x"][s.name] * s.gpus_per_replica for s in shapes),
                training_groups=got["G"],
                training_gpus=got["G"] * gpg,
                local_nodes=[Count(type=k, count=got["N"][k]) for k in ix.nodes],
                cloud_vms=[Count(type=v, count=got["V"][v]) for v in ix.vms],
                hourly_cost=hourly,
                total_cost=hourly * span / 3600.0,
                cost_terms=terms,
                pools=PoolUse.rows(inst.gpu_pools, used),
                placement=_placement(c, values, p, got),
            )
        )
    return plans


def _cost_terms(c: CompactModel, got: dict) -> CostTerms:
    """MODEL §4's GPU, node and VM terms ($/h) at the solution's rounded counts."""
    inst, ix, price = c.inst, c.ix, c.shared["gpu_price"]
    gpu = sum(price[s.pool] * s.gpus_per_replica * got["x"][s.name] for s in inst.inference.shapes)
    gpu += price[ix.training_pool] * inst.training.gpus_per_group * got["G"] + c.shared["reserved_cost"][None]
    node = sum(c.shared["node_price"][k] * got["N"][k] for k in ix.nodes)
    vm = sum(c.shared["vm_price"][v] * got["V"][v] for v in ix.vms)
    return CostTerms(gpu=gpu, node=node, vm=vm)


def _placement(c: CompactModel, values, p: int, got: dict) -> Placement:
    """Stage ``p``'s splits: steady and peak on nodes, peak on VMs, at its counts ``got``."""
    m = c.model
    value = lambda name, host, b: float(values.get(getattr(m, name)[p, host, b], 0.0) or 0.0)  # noqa: E731
    return placement(c.inst, c.ix, value, got["N"], got["V"])
