"""Test-only brute force for confidence solves (MODEL.md §9, with §8, §11 and §13): small random instances and
the cheapest plan found by enumeration, judged by the scenario evaluator (solver.uncertainty.scenarios.evaluate) alone.

It shares nothing with the confidence MIP (solver/confidence*.py, solver/uncertainty/deadline.py): a plan meets
§3 at the nominal values iff the evaluator, with every multiplier 1, realises its planned cadence and finds it
on time (T + Δ <= deadline, which under hold counts §8's start-up and §11's allowance), and it is on time in a
scenario iff the evaluator says so there.
"""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import numpy as np

from trainground.models.load import validate
from trainground.solver.uncertainty import scenarios as sc

FACTORS = [
    {
        "name": "throughput",
        "paths": ["inference.shapes[*].tokens_per_gpu_s"],
        "dist": "normal",
        "mean": 1.0,
        "sd": 0.15,
    },
    {"name": "lifetimes", "paths": ["environment.occupancy.median"], "dist": "lognormal", "median": 1.0, "sigma": 0.3},
    {
        "name": "updates",
        "paths": ["training.update_time.reference_time"],
        "dist": "uniform",
        "low": 0.8,
        "high": 1.4,
    },
]


def small_instance(
    seed: int,
    alpha: float,
    samples: int = 10,
    basis: str = "steady_state",
    reliability: dict | None = None,
    factors: list[dict] | None = None,
    deadline: float = 400.0,
    second: dict | None = None,
    gpus: int = 16,
):
    """A run of 10 iterations on a pool of ``gpus`` GPUs with one shape and one node type, throughput, lifetimes and the
    update time uncertain (or ``factors``); ``reliability``: a MODEL §13 section; ``second``: a second shape,
    with ``pool`` (a pool dict) when it runs in a pool of its own."""
    rng = np.random.default_rng(seed)
    data = {
        "schema_version": 1,
        "name": f"small-{seed}",
        "workload": {
            "iterations": 10,
            "batch_trajectories": 4,
            "group_size": 2,
            "tokens_per_attempt": 8,
            "intake_rate": 1.0,
        },
        "schedule": {"deadline": deadline, "extra_time": 0.0, "cadence": {"min": 30.0, "max": 40.0, "step": 5.0}},
        "gpu_pools": [{"name": "main", "gpus": gpus, "gpu_hour_cost": 1.0}],
        "inference": {
            "availability": 1.0,
            "shapes": [
                {
                    "name": "s0",
                    "pool": "main",
                    "gpus_per_replica": 1,
                    "tokens_per_gpu_s": float(rng.choice([0.8, 1.2, 1.6])),
                    "version_slowdown": 0.0,
                }
            ],
        },
        "training": {
            "pool": "main",
            "gpus_per_group": 2,
            "update_time": {"law": "inverse", "reference_gpus": 4, "reference_time": float(rng.choice([25, 40, 60]))},
        },
        "environment": {
            "occupancy": {"distribution": "lognormal", "median": float(rng.choice([10, 20, 40])), "sigma": 0.6},
            "backends": [{"name": "c", "share": 1.0}],
            "node_types": [
                {"name": "n", "density": {"c": float(rng.choice([1, 2, 3]))}, "hour_cost": 0.7, "max_nodes": 5}
            ],
            "cloud": {"eligible_share": {}, "vm_types": []},
        },
        "freshness": {"max_versions_kept": 2, "overrun_policy": "drop", "group_correlation": "independent"},
        "planning": {"basis": basis, "replays": 16},
        "uncertainty": {"samples": samples, "seed": seed, "confidence": alpha, "factors": factors or FACTORS},
    }
    if reliability is not None:
        data["reliability"] = reliability
    if second is not None:
        shape = {k: v for k, v in second.items() if k != "pool"}
        if isinstance(second.get("pool"), dict):
            data["gpu_pools"].append(second["pool"])
            shape["pool"] = second["pool"]["name"]
        data["inference"]["shapes"].append({"pool": "main", "version_slowdown": 0.0, **shape})
    return validate(data, f"small-{seed}.yaml")


def brute_force(inst, allowance: float = 0.0) -> float:
    """The cheapest total cost over every (cadence, K, groups, nodes, replicas) plan that meets MODEL §3 at
    nominal values and is on time in at least ceil(α·S) of the scenarios, each on time iff T_s + ``allowance``
    <= deadline; every count of the first shapes' replicas, the last shape's by bisection (every check only
    gets easier with more)."""
    unc = inst.uncertainty
    scen = sc.draw(inst)
    both = sc.from_draws(inst, np.vstack([np.ones((1, len(unc.factors))), scen.draws]))  # nominal first
    k = math.ceil(unc.confidence * scen.size - 1e-9)
    shapes, gpg = inst.inference.shapes, inst.training.gpus_per_group
    node = inst.environment.node_types[0]
    price = {p.name: p.gpu_hour_cost for p in inst.gpu_pools}
    cadence = inst.schedule.cadence
    best = math.inf

    def plan(L, K, m, N, counts):
        inference = [
            SimpleNamespace(shape=s.name, pool=s.pool, replicas=x, gpus=x * s.gpus_per_replica)
            for s, x in zip(shapes, counts)
        ]
        return SimpleNamespace(
            cadence_s=L,
            versions_kept=K,
            training_gpus=m * gpg,
            inference=inference,
            local_nodes=[SimpleNamespace(type=node.name, count=N)],
            cloud_vms=[],
        )

    def check(L, K, m, N, counts):
        free = {p.name: p.gpus for p in inst.gpu_pools}
        free[inst.training.pool] -= m * gpg
        for s, x in zip(shapes, counts):
            free[s.pool] -= x * s.gpus_per_replica
        if min(free.values()) < 0:
            return False, math.inf
        out = sc.evaluate(inst, plan(L, K, m, N, counts), both, allowance)
        ok = out.cadence[0] <= L * (1 + 1e-9) and bool(out.on_time[0]) and int(out.on_time[1:].sum()) >= k
        return ok, float(out.makespan[0])

    def cost(m, N, counts):
        gpus = m * gpg * price[inst.training.pool] + N * node.hour_cost
        return gpus + sum(x * s.gpus_per_replica * price[s.pool] for s, x in zip(shapes, counts))

    last = shapes[-1]
    for L in np.arange(cadence.min, cadence.max + 1e-9, cadence.step):
        for K in range(1, inst.freshness.max_versions_kept + 1):
            for m in range(1, inst.pool(inst.training.pool).gpus // gpg + 1):
                for N in range(0, node.max_nodes + 1):
                    for head in itertools.product(
                        *(range(inst.pool(s.pool).gpus // s.gpus_per_replica + 1) for s in shapes[:-1])
                    ):
                        used = m * gpg if inst.training.pool == last.pool else 0
                        used += sum(x * s.gpus_per_replica for s, x in zip(shapes, head) if s.pool == last.pool)
                        top = (inst.pool(last.pool).gpus - used) // last.gpus_per_replica  # all the pool holds
                        ok, span = check(L, K, m, N, (*head, top)) if top >= 0 else (False, math.inf)
                        if not ok or cost(m, N, (*head, 0)) * span / 3600.0 >= best:
                            continue
                        lo, hi = -1, top  # the check holds at hi; find the fewest replicas that pass
                        while hi - lo > 1:
                            mid = (lo + hi) // 2
                            lo, hi = (lo, mid) if check(L, K, m, N, (*head, mid))[0] else (mid, hi)
                        best = min(best, cost(m, N, (*head, hi)) * span / 3600.0)
    return best
