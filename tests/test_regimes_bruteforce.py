"""The run regimes of MODEL.md §14 planned by the MIP against the brute force of tests/regimes_reference.py, on small
random instances, every objective: a batch run (pipelined k = 0 and 1, colocated: timeouts kept or filtered, weight
sync, switch time, a second pool), an admission run, and an async drop run with regime fields set (in-flight
updates with or without re-prefills, a timeout, a concurrency cap, a weight sync; freshness limits, slowdowns)."""

from __future__ import annotations

import random

import pytest

from tests import reference as ref
from tests.regimes_reference import admission_points, batch_points, drop_points
from tests.strategies import examples
from trainground.models.load import validate
from trainground.solver.solve import Planner

INSTANCES = examples(24)
VALUE = {"total_cost": "total", "hourly_cost": "hourly", "makespan": "makespan"}


def random_pipelined(seed: int) -> dict:
    rng = random.Random(seed)
    median = rng.choice([2.0, 5.0, 10.0])
    mode = rng.choice(["pipelined", "pipelined", "colocated"])
    regime: dict = {"mode": mode, "steps_ahead": rng.choice([0, 1])} if mode == "pipelined" else {"mode": mode}
    if mode == "colocated" and rng.random() < 0.5:
        regime["switch_time"] = rng.choice([2.0, 5.0])
    if rng.random() < 0.5:
        regime["rollout_timeout"] = median * rng.choice([1.5, 3.0])
        regime["truncated"] = rng.choice(["keep", "filter"])
    if rng.random() < 0.3:
        regime["weight_sync_time"] = rng.choice([1.0, 3.0])
    data = {
        "schema_version": 1,
        "name": f"pipelined-{seed}",
        "workload": {
            "iterations": 10,
            "batch_trajectories": rng.choice([4, 6, 8]),
            "group_size": rng.choice([1, 2]),
            "tokens_per_attempt": 8,
            "intake_rate": rng.choice([1.0, 0.75]),
        },
        "schedule": {"deadline": 2000.0, "extra_time": 0.0, "cadence": {"min": 20.0, "max": 80.0, "step": 5.0}},
        "gpu_pools": [{"name": "main", "gpus": 12, "gpu_hour_cost": 1.0}],
        "inference": {
            "availability": rng.choice([1.0, 0.9]),
            "shapes": [
                {"name": "s0", "pool": "main", "gpus_per_replica": 1, "tokens_per_gpu_s": rng.choice([0.8, 1.5, 3.0])}
            ],
        },
        "training": {
            "pool": "main",
            "gpus_per_group": 2,
            "update_time": {"law": "inverse", "reference_gpus": 4, "reference_time": rng.choice([10.0, 20.0, 40.0])},
        },
        "environment": {
            "occupancy": {"distribution": "lognormal", "median": median, "sigma": rng.choice([0.3, 0.6])},
            "backends": [{"name": "c", "share": 1.0}],
            "node_types": [{"name": "n", "density": {"c": rng.choice([2.0, 3.0])}, "hour_cost": 0.7, "max_nodes": 10}],
            "peak_to_mean": rng.choice([1.0, 1.5]),
            "cloud": {"eligible_share": {}, "vm_types": []},
        },
        "freshness": {"max_versions_kept": 2, "group_correlation": rng.choice(["independent", "comonotone"])},
        "planning": {"basis": "steady_state"},
        "regime": regime,
    }
    law = rng.choice(["inverse", "inverse", "amdahl", "table"])  # a measured table need not fall with the GPUs
    if law == "amdahl":
        data["training"]["update_time"] = {
            "law": "amdahl",
            "reference_gpus": 4,
            "reference_time": rng.choice([10.0, 20.0, 40.0]),
            "serial_fraction": rng.choice([0.1, 0.3]),
        }
    elif law == "table":
        points = [{"gpus": g, "seconds": rng.choice([5.0, 10.0, 15.0, 20.0, 40.0])} for g in (2, 4, 6, 8, 10, 12)]
        data["training"]["update_time"] = {"law": "table", "points": points}
    if mode == "pipelined" and rng.random() < 0.4:
        data["gpu_pools"].append({"name": "side", "gpus": 6, "gpu_hour_cost": 0.6})
        data["inference"]["shapes"].append(
            {"name": "s1", "pool": "side", "gpus_per_replica": 2, "tokens_per_gpu_s": rng.choice([1.0, 2.0])}
        )
    return data


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def agreed(inst, points, seed: int) -> set[str]:
    """The objectives whose MIP optimum ``inst`` has, each asserted equal to the brute force's over ``points``
    (and infeasible where the brute force finds no plan)."""
    planner, solved = Planner(inst), set()
    for objective, key in VALUE.items():
        expected = ref.best(points, objective)
        result = planner.solve(objective)
        if expected is None:
            assert result.status == "infeasible", (seed, objective, result.plan)
            continue
        assert result.status == "optimal", (seed, objective, result.status)
        plan = result.plan
        got = {"total": plan.total_cost, "hourly": plan.hourly_cost, "makespan": plan.makespan_s}
        assert _close(got[key], getattr(expected, key)), (seed, objective, got, expected)
        solved.add(objective)
    return solved


@pytest.mark.parametrize("chunk", range(2))
def test_a_batch_run_matches_brute_force(chunk):
    seen: dict[str, set] = {"pipelined k=0": set(), "pipelined k=1": set(), "colocated": set()}
    for seed in range(chunk, INSTANCES, 2):
        inst = validate(random_pipelined(seed), "random.yaml")
        seen[inst.regime.label] |= agreed(inst, batch_points(inst), seed)
    assert all(len(s) == 3 for s in seen.values()), seen  # every batch mode, every objective, with plans


def random_admission(seed: int) -> dict:
    rng = random.Random(1000 + seed)
    data = random_pipelined(seed)
    regime: dict = {"mode": "async", "staleness": "admission", "in_flight_updates": True}
    regime["steps_ahead"] = rng.choice([1, 2, 4])
    if rng.random() < 0.4:
        regime.update(recompute="prefix", prefill_cost=0.05, context_tokens=rng.choice([0.0, 16.0]))
    if rng.random() < 0.4:
        regime["rollout_timeout"] = data["environment"]["occupancy"]["median"] * rng.choice([1.5, 3.0])
        regime["truncated"] = rng.choice(["keep", "filter"])
    if rng.random() < 0.3:
        regime["weight_sync_time"] = rng.choice([1.0, 3.0])
    if rng.random() < 0.3:
        data["freshness"]["max_mean_gap"] = rng.choice([0.3, 1.0, 2.0])
    data["regime"] = regime
    return data


@pytest.mark.parametrize("chunk", range(2))
def test_an_admission_run_matches_brute_force(chunk):
    seen: set[str] = set()
    for seed in range(chunk, INSTANCES, 2):
        inst = validate(random_admission(seed), "random.yaml")
        seen |= agreed(inst, admission_points(inst), seed)
    assert seen == set(VALUE)  # every objective, with plans


def random_drop(seed: int) -> dict:
    """An async drop run with one to four regime fields set, on a cadence grid short enough for drops."""
    rng = random.Random(2000 + seed)
    data = random_pipelined(seed)
    regime: dict = {"mode": "async"}
    for option in rng.sample(["in_flight", "timeout", "cap", "sync"], rng.choice([1, 2, 2, 3, 4])):
        if option == "in_flight":
            regime["in_flight_updates"] = True
            if rng.random() < 0.5:
                regime.update(recompute="prefix", prefill_cost=0.05, context_tokens=rng.choice([0.0, 16.0]))
        elif option == "timeout":
            regime["rollout_timeout"] = data["environment"]["occupancy"]["median"] * rng.choice([1.5, 3.0])
            regime["truncated"] = rng.choice(["keep", "filter"])
        elif option == "cap":
            regime["max_concurrent_attempts"] = rng.choice([1, 2, 4])
        else:
            regime["weight_sync_time"] = rng.choice([1.0, 3.0])
    data["regime"] = regime
    data["schedule"]["cadence"] = {"min": 5.0, "max": 40.0, "step": 5.0}
    data["environment"]["occupancy"]["sigma"] = rng.choice([0.3, 0.6, 1.0])
    for shape in data["inference"]["shapes"]:
        shape["version_slowdown"] = rng.choice([0.0, 0.1, 0.3])
    fr = data["freshness"]
    fr.update(
        max_versions_kept=rng.choice([1, 2, 3, 4]),
        overrun_policy=rng.choice(["drop", "drop", "downweight"]),
        gap_convention=rng.choice(["consumer", "consumer", "post_publish"]),
    )
    for name, values in (("max_exceedance", [0.05, 0.2]), ("max_group_drop", [0.1, 0.5]), ("max_mean_gap", [0.5, 1.5])):
        if rng.random() < 0.2:
            fr[name] = rng.choice(values)
    return data


@pytest.mark.parametrize("chunk", range(2))
def test_an_async_drop_run_with_regime_fields_matches_brute_force(chunk):
    seen: dict[str, set] = {"in_flight_updates": set(), "rollout_timeout": set(), "max_concurrent_attempts": set()}
    for seed in range(chunk, INSTANCES, 2):
        inst = validate(random_drop(seed), "random.yaml")
        solved = agreed(inst, drop_points(inst), seed)
        for name in seen:
            if getattr(inst.regime, name) not in (None, False):
                seen[name] |= solved
    assert all(s == set(VALUE) for s in seen.values()), seen  # each variant, every objective, with plans
