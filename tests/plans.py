"""Test helpers shared by the plan tests."""

from __future__ import annotations

import copy

from tests.reference import goodput
from trainground.models.result import CostTerms, PoolUse, ShapeReplicas


def decisions(result) -> dict:
    """A plan's decisions in the instance's vocabulary, for comparing two plans."""
    plan = result.plan
    return {
        "cadence": plan.cadence_s,
        "K": plan.versions_kept,
        "replicas": {r.shape: r.replicas for r in plan.inference},
        "groups": plan.training_groups,
        "nodes": {n.type: n.count for n in plan.local_nodes},
        "vms": {v.type: v.count for v in plan.cloud_vms},
    }


def recosted(inst, plan, span: float | None = None, **update):
    """``plan`` with ``update`` applied and every derived field (GPUs, pools, costs) recomputed from its
    counts, by MODEL §4 (a reserved pool bills all its GPUs); the makespan is ``span``, by default
    n·L + extra_time (MODEL §2), n·L/γ + extra_time with a reliability section (§13)."""
    plan = plan.model_copy(update=copy.deepcopy(update), deep=True)
    shapes = {s.name: s for s in inst.inference.shapes}
    inference = [
        ShapeReplicas(
            shape=r.shape, pool=r.pool, replicas=r.replicas, gpus=r.replicas * shapes[r.shape].gpus_per_replica
        )
        for r in plan.inference
    ]
    training_gpus = plan.training_groups * inst.training.gpus_per_group
    used = {p.name: 0 for p in inst.gpu_pools}
    for r in inference:
        used[r.pool] += r.gpus
    used[inst.training.pool] += training_gpus
    nodes = {n.type: n.count for n in plan.local_nodes}
    vms = {v.type: v.count for v in plan.cloud_vms}
    gpu = sum(p.gpu_hour_cost * (p.gpus if p.billing == "reserved" else used[p.name]) for p in inst.gpu_pools)
    node = sum(k.hour_cost * nodes.get(k.name, 0) for k in inst.environment.node_types)
    vm = sum(v.hour_cost * v.billed_fraction * vms.get(v.name, 0) for v in inst.environment.cloud.vm_types)
    if span is None:  # MODEL §13: the iterations' time divided by the training goodput (1 without it)
        span = inst.workload.iterations * plan.cadence_s / goodput(inst, training_gpus) + inst.schedule.extra_time
    hourly = gpu + node + vm
    return plan.model_copy(
        update={
            "inference": inference,
            "inference_gpus": sum(r.gpus for r in inference),
            "training_gpus": training_gpus,
            "pools": [PoolUse(pool=p.name, gpus_used=used[p.name], gpus=p.gpus) for p in inst.gpu_pools],
            "cost_terms": CostTerms(gpu=gpu, node=node, vm=vm),
            "hourly_cost": hourly,
            "makespan_s": span,
            "total_cost": hourly * span / 3600.0,
        }
    )
