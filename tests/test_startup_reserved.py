"""Regression: MODEL §8 start-up counted with a §4 reserved pool.

With ``count_startup`` the makespan holds U(m), so more training groups shorten the run, and in a
reserved pool they cost nothing more. The group-count expansion (solver/table/pairs.py) used to bound the
groups the pool can spare with a per-GPU rate that ignored the version slowdown at K: too high a rate,
so too few spare groups. On ``SMALL`` at L = 30 s, K = 2 it listed m = 1, 2 only, where m = 3 fits:
three 1-GPU groups leave 1 GPU for one s1 replica giving 12·(1 − 0.3) = 8.4 tok/s ≥ the 1.34 tok/s the
run needs, and U(3) = 5 s against U(2) = 7.5 s makes the run 2.5 s shorter at the same $/h
(total 0.48235 against the 0.48721 the MIP found). Hypothesis found both instances (test_frontier).
"""

from __future__ import annotations

import copy

import pytest

from tests import reference
from tests.strategies import instance_of
from trainground.solver.solve import solve_instance
from trainground.solver.table import pairs

REL = 1e-9


def _small() -> dict:
    shape = {"pool": "main", "gpus_per_replica": 1, "tokens_per_gpu_s": 1.0, "version_slowdown": 0.0}
    return {
        "name": "random",
        "workload": {
            "iterations": 7,
            "batch_trajectories": 5,
            "group_size": 1,
            "tokens_per_attempt": 4,
            "intake_rate": 1.0,
        },
        "schedule": {"deadline": 267.75, "extra_time": 0, "cadence": {"min": 30, "step": 1}, "count_startup": True},
        "gpu_pools": [{"name": "main", "gpus": 4, "gpu_hour_cost": 1.0, "billing": "reserved"}],
        "inference": {
            "availability": 1.0,
            "shapes": [
                {**shape, "name": "s0"},
                {**shape, "name": "s1", "tokens_per_gpu_s": 12.0, "version_slowdown": 0.3},
                {**shape, "name": "s2"},
            ],
        },
        "training": {
            "pool": "main",
            "gpus_per_group": 1,
            "update_time": {"law": "inverse", "reference_gpus": 1, "reference_time": 15.0},
        },
        "environment": {
            "occupancy": {"distribution": "lognormal", "median": 75.0, "sigma": 1.3},
            "littles_law_uses": "mean",
            "backends": [{"name": "ctr", "share": 0.75, "cores": 0.5}, {"name": "vm", "share": 0.25, "cores": 1.0}],
            "node_types": [{"name": "n0", "density": {"ctr": 6.0, "vm": 6.0}, "hour_cost": 0.3}],
            "utilisation_cap": 1.0,
            "peak_to_mean": 1.0,
            "cloud": {},
        },
        "freshness": {
            "max_versions_kept": 2,
            "gap_convention": "consumer",
            "overrun_policy": "drop",
            "group_correlation": "independent",
        },
        "objective": "total_cost",
        "limits": {},
    }


def _wide() -> dict:
    """2-GPU replicas and groups in a 14-GPU pool; its hourly optimum (35.6 $/h at L = 37 s, K = 2)
    needs enough groups to meet the deadline, which the old bound cut (it found 35.9 $/h)."""
    data = _small()
    data["workload"]["tokens_per_attempt"] = 8
    data["schedule"]["deadline"] = 315.0
    data["gpu_pools"][0].update(gpus=14, gpu_hour_cost=2.5)
    data["inference"]["availability"] = 0.9
    for s in data["inference"]["shapes"]:
        s["gpus_per_replica"] = 2
    data["inference"]["shapes"][0]["tokens_per_gpu_s"] = 2.0
    data["inference"]["shapes"][2]["version_slowdown"] = 0.05
    data["training"].update(
        gpus_per_group=2, update_time={"law": "inverse", "reference_gpus": 6, "reference_time": 30.0}
    )
    env = data["environment"]
    env["backends"][0]["share"] = env["backends"][1]["share"] = 0.5
    env["node_types"] = [
        {"name": "n0", "density": {"ctr": 22.5, "vm": 22.5}, "cores": 16.0, "hour_cost": 0.3, "max_nodes": 4}
    ]
    return data


def _with_billing(data: dict, billing: str) -> dict:
    data = copy.deepcopy(data)
    for pool in data["gpu_pools"]:
        pool["billing"] = billing
    return data


def _close(a: float, b: float, rel: float = REL) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(b))


@pytest.mark.parametrize("make", [_small, _wide])
@pytest.mark.parametrize("billing", ["reserved", "used"])
@pytest.mark.parametrize("objective", ["total_cost", "hourly_cost", "makespan"])
def test_solver_matches_brute_force(make, billing, objective):
    inst = instance_of(_with_billing(make(), billing))
    expected = reference.best(reference.feasible_points(inst), objective)
    found = solve_instance(inst, objective).plan
    assert expected is not None and found is not None
    got = {"total_cost": found.total_cost, "hourly_cost": found.hourly_cost, "makespan": found.makespan_s}[objective]
    want = {"total_cost": expected.total, "hourly_cost": expected.hourly, "makespan": expected.makespan}[objective]
    assert _close(got, want), (got, want)
    assert _close(found.makespan_s, expected.makespan, 1e-7), (found.makespan_s, expected.makespan)


def test_known_optimum_of_the_small_instance():
    """By hand (module docstring): L = 30 s, K = 2, m = 3; T = fill + 6·30 + U(3) with U(3) = 5 s."""
    found = solve_instance(instance_of(_small()), "total_cost").plan
    assert found.hourly_cost == pytest.approx(4 * 1.0 + 10 * 0.3, rel=1e-12)  # whole pool + 10 nodes
    assert found.total_cost == pytest.approx(0.4823452686777076, rel=1e-9)
    assert found.makespan_s == pytest.approx(248.0632810342496, rel=1e-9)


def test_expansion_lists_every_group_count_the_pool_capacity_bound_admits():
    """At L = 30 s, K = 2 the best shape gives 8.4 tok/s per GPU; m = 3 leaves 1 GPU (8.4 ≥ 1.34 needed)."""
    table = pairs.build(instance_of(_small()))
    at_30_k2 = sorted(m for (L, K, m) in table.keys() if L == 30.0 and K == 2)
    assert at_30_k2 == [1, 2, 3]
