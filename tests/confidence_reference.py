"""Test-only brute force for confidence solves (MODEL.md §9, with §8, §11 and §13): small random instances and
the cheapest plan found by enumeration, judged by the scenario evaluator (solver.scenarios.evaluate) alone.

It shares nothing with the confidence MIP (solver/confidence*.py, solver/scenario_deadline.py): a plan meets
§3 at the nominal values iff the evaluator, with every multiplier 1, realises its planned cadence and finds it
on time (T + Δ <= deadline, which under hold counts §8's start-up and §11's allowance), and it is on time in a
scenario iff the evaluator says so there.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from trainground.models.load import validate
from trainground.solver import scenarios as sc

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
):
    """A run of 10 iterations on a 16-GPU pool with one shape and one node type, throughput, lifetimes and the
    update time uncertain (or ``factors``); ``reliability``: a MODEL §13 section."""
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
        "gpu_pools": [{"name": "main", "gpus": 16, "gpu_hour_cost": 1.0}],
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
    return validate(data, f"small-{seed}.yaml")


def brute_force(inst, allowance: float = 0.0) -> float:
    """The cheapest total cost over every (cadence, K, groups, nodes, replicas) plan that meets MODEL §3 at
    nominal values and is on time in at least ceil(α·S) of the scenarios, each on time iff T_s + ``allowance``
    <= deadline; replicas by bisection (every check only gets easier with more)."""
    unc = inst.uncertainty
    scen = sc.draw(inst)
    both = sc.from_draws(inst, np.vstack([np.ones((1, len(unc.factors))), scen.draws]))  # nominal first
    k = math.ceil(unc.confidence * scen.size - 1e-9)
    pool, gpg = inst.gpu_pools[0].gpus, inst.training.gpus_per_group
    node = inst.environment.node_types[0]
    cadence = inst.schedule.cadence
    best = math.inf

    def plan(L, K, m, N, x):
        return SimpleNamespace(
            cadence_s=L,
            versions_kept=K,
            training_gpus=m * gpg,
            inference=[SimpleNamespace(shape="s0", pool="main", replicas=x, gpus=x)],
            local_nodes=[SimpleNamespace(type=node.name, count=N)],
            cloud_vms=[],
        )

    def check(L, K, m, N, x):
        out = sc.evaluate(inst, plan(L, K, m, N, x), both, allowance)
        ok = out.cadence[0] <= L * (1 + 1e-9) and bool(out.on_time[0]) and int(out.on_time[1:].sum()) >= k
        return ok, float(out.makespan[0])

    for L in np.arange(cadence.min, cadence.max + 1e-9, cadence.step):
        for K in range(1, inst.freshness.max_versions_kept + 1):
            for m in range(1, pool // gpg + 1):
                for N in range(0, node.max_nodes + 1):
                    top = pool - m * gpg
                    ok, span = check(L, K, m, N, top)
                    fixed = m * gpg * 1.0 + N * node.hour_cost
                    if not ok or fixed * span / 3600.0 >= best:
                        continue
                    lo, hi = -1, top  # the check holds at hi; find the fewest replicas that pass
                    while hi - lo > 1:
                        mid = (lo + hi) // 2
                        lo, hi = (lo, mid) if check(L, K, m, N, mid)[0] else (mid, hi)
                    best = min(best, (fixed + hi * 1.0) * span / 3600.0)
    return best
