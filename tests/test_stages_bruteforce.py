"""The staged MIP's optimum equals a brute-force enumeration (MODEL.md §12) on small random staged instances,
under both capacities and all three objectives, tie-breaks included; every plan passes the staged verifier.
Under ``fixed`` the compact model's hull search answers, and on a third of those instances the pair model
(which a cap on the total cost uses) is checked too."""

from __future__ import annotations

import math
import random

import pytest

from tests import stages_reference as ref
from tests.strategies import examples
from trainground.models.load import validate
from trainground.solver.stages.solve import StagedPlanner

INSTANCES = examples(32)
VALUE = {"total_cost": "total", "hourly_cost": "hourly", "makespan": "makespan"}


def _close(a: float, b: float, rel: float = 1e-7) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def random_staged(seed: int) -> dict:
    """A small staged instance: 2-3 stages whose tokens, lifetimes, intake and update times differ."""
    rng = random.Random(seed)
    stages = rng.choice((2, 3))
    split = [rng.randint(1, 4) for _ in range(stages)]
    n = sum(split)
    shapes = [
        {
            "name": f"s{i}",
            "pool": "main",
            "gpus_per_replica": rng.choice((1, 2)),
            "tokens_per_gpu_s": rng.choice((20, 30, 45, 60)),
            "version_slowdown": rng.choice((0.0, 0.0, 0.05, 0.1)),
        }
        for i in range(rng.choice((1, 2)))
    ]
    vm = [
        {
            "name": "burst",
            "density": {"env": rng.choice((2, 4))},
            "hour_cost": 0.5,
            "billed_fraction": 0.5,
            "max_vms": 2,
        }
    ]
    capacity = rng.choice(("fixed", "replan"))
    return {
        "name": f"staged-{seed}",
        "workload": {
            "iterations": n,
            "batch_trajectories": rng.randint(2, 8),
            "group_size": rng.choice((1, 2, 4)),
            "tokens_per_attempt": rng.choice((100, 200, 300)),
        },
        "schedule": {
            "deadline": n * rng.choice((70, 90, 110, 130)) + 50,
            "extra_time": rng.choice((0, 50)),
            "cadence": {"min": 40, "max": 120, "step": 20},
        },
        "gpu_pools": [{"name": "main", "gpus": rng.randint(4, 8), "gpu_hour_cost": rng.choice((1.0, 2.0))}],
        "inference": {"shapes": shapes},
        "training": {
            "pool": "main",
            "gpus_per_group": rng.choice((1, 2)),
            "update_time": {"law": "inverse", "reference_gpus": 1, "reference_time": rng.choice((30, 60, 120))},
        },
        "environment": {
            "occupancy": {"distribution": "lognormal", "median": rng.choice((20, 40, 60)), "p99": 200},
            "backends": [{"name": "env", "share": 1.0}],
            "node_types": [
                {"name": "node", "density": {"env": rng.choice((2, 3, 5))}, "hour_cost": rng.choice((0.3, 1.0))}
            ],
            "peak_to_mean": rng.choice((1.0, 1.5)),
            "cloud": {"eligible_share": {"env": 0.5}, "vm_types": vm if rng.random() < 0.5 else []},
        },
        "freshness": {
            "max_versions_kept": rng.choice((1, 2, 3)),
            "overrun_policy": rng.choice(("drop", "downweight")),
        },
        "planning": {"basis": "steady_state"},
        "stages": {
            "capacity": capacity,
            "switch_time": rng.choice((0, 30, 200)) if capacity == "replan" else 0,
            "list": [
                {
                    "name": f"p{i}",
                    "iterations": split[i],
                    "tokens_per_attempt": rng.choice((None, 100, 200, 400)),
                    "intake_rate": rng.choice((None, 0.8)),
                    "update_time_scale": rng.choice((1.0, 1.5)),
                    "occupancy": rng.choice(
                        (None, {"distribution": "lognormal", "median": rng.choice((30, 80)), "p99": 300})
                    ),
                }
                for i in range(stages)
            ],
        },
    }


def _host_top(inst) -> int:
    """Nodes worth enumerating: enough to hold the largest peak of any stage at any K and cadence alone."""
    top = 0.0
    for K in range(1, inst.freshness.max_versions_kept + 1):
        for si, _, attempts, _, peak, _ in ref.stage_tables(inst, K):
            finite = peak[attempts < math.inf]
            if finite.size:
                d = si.environment.node_types[0].density["env"]
                top = max(top, float(finite.max()) / (si.environment.utilisation_cap * d))
    return int(math.ceil(top)) + 1


@pytest.mark.parametrize("chunk", range(4))
def test_staged_mip_matches_brute_force(chunk):
    seen = {"fixed": set(), "replan": set()}
    for seed in range(chunk, INSTANCES, 4):
        inst = validate(random_staged(seed), "random.yaml")
        vms = inst.environment.cloud.vm_types
        found = ref.candidates(inst, _host_top(inst), vms[0].max_vms if vms else 0)
        planner = StagedPlanner(inst)
        for objective in VALUE:
            expected = ref.best(found, objective)
            result = planner.solve(objective)
            if expected is None:
                assert result.status == "infeasible", (seed, objective, result.plan)
                continue
            seen[inst.stages.capacity].add(objective)
            assert result.status == "optimal", (seed, objective, result.status, expected)
            plan = result.plan
            got = {"total": plan.total_cost, "hourly": plan.hourly_cost, "makespan": plan.makespan_s}
            for key in ref.ORDER[objective]:
                assert _close(got[key], expected[key]), (seed, objective, key, got, expected)
            if inst.stages.capacity == "fixed" and seed % 3 == 0:  # the pair model too (a total-cost cap's)
                pairs = planner.solve(objective, max_total_cost=1e15).plan
                again = {"total": pairs.total_cost, "hourly": pairs.hourly_cost, "makespan": pairs.makespan_s}
                for key in ref.ORDER[objective]:
                    assert _close(again[key], expected[key]), (seed, objective, key, again, expected, "pairs")
    assert all(len(s) == 3 for s in seen.values()), seen  # both capacities, every objective, with plans
