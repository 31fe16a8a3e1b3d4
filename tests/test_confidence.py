"""Confidence solves (MODEL.md §9, sample average approximation): the MIP against a test-only brute force,
the deterministic optimum in the degenerate cases, monotonicity in α, out-of-sample shares, the verifier."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from trainground.models.edits import load_edited
from trainground.models.load import validate
from trainground.solver import scenarios as sc
from trainground.solver.confidence import CHECK_SAMPLES
from trainground.solver.confidence_model import needed
from trainground.solver.solve import Planner
from trainground.solver.verify import verify_plan

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"

FACTORS = [
    {
        "name": "throughput",
        "paths": ["inference.shapes[*].tokens_per_gpu_s"],
        "dist": "normal",
        "mean": 1.0,
        "sd": 0.05,
    },
    {
        "name": "lifetimes",
        "paths": ["environment.occupancy.median", "environment.occupancy.p99"],
        "dist": "lognormal",
        "median": 1.0,
        "sigma": 0.1,
    },
    {"name": "updates", "paths": ["training.update_time.reference_time"], "dist": "uniform", "low": 0.95, "high": 1.3},
]


def seed_with(factors: list[dict], samples: int, confidence: float | None):
    inst = load_edited(SEED, [])
    data = inst.model_dump(mode="python")
    data["uncertainty"] = {"samples": samples, "seed": 0, "confidence": confidence, "factors": factors}
    return validate(data, "seed-week-75.yaml")


def deterministic(inst):
    return inst.model_copy(update={"uncertainty": inst.uncertainty.model_copy(update={"confidence": None})})


def same_plan(a, b) -> None:
    assert a.plan.total_cost == pytest.approx(b.plan.total_cost, rel=1e-9)
    assert a.plan.cadence_s == b.plan.cadence_s and a.plan.versions_kept == b.plan.versions_kept
    assert [r.replicas for r in a.plan.inference] == [r.replicas for r in b.plan.inference]
    assert a.plan.training_groups == b.plan.training_groups
    assert [n.count for n in a.plan.local_nodes] == [n.count for n in b.plan.local_nodes]


def test_degenerate_factors_give_the_deterministic_optimum():
    flat = [
        {
            "name": "throughput",
            "paths": ["inference.shapes[*].tokens_per_gpu_s"],
            "dist": "normal",
            "mean": 1.0,
            "sd": 0.0,
        },
        {
            "name": "lifetimes",
            "paths": ["environment.occupancy.median"],
            "dist": "lognormal",
            "median": 1.0,
            "sigma": 0.0,
        },
        {
            "name": "updates",
            "paths": ["training.update_time.reference_time"],
            "dist": "uniform",
            "low": 1.0,
            "high": 1.0,
        },
    ]
    inst = seed_with(flat, 200, 0.9)
    result = Planner(inst).solve()
    base = Planner(deterministic(inst)).solve()
    same_plan(result, base)
    assert result.confidence.groups == 1  # 200 identical scenarios merged into one
    assert result.confidence.in_sample == 1.0 and result.confidence.out_of_sample == 1.0


def test_alpha_zero_gives_the_deterministic_optimum():
    inst = seed_with(FACTORS, 200, 0.0)
    same_plan(Planner(inst).solve(), Planner(deterministic(inst)).solve())


def test_seed_plan_for_ninety_percent_is_on_time_out_of_sample_and_verified():
    """S = 300 (a fast stand-in for the default 1,000): the out-of-sample share may fall short of α by
    the SAA's own sampling error, ~sqrt(α(1-α)/S) = 1.7 points here, and the estimate's, sqrt(α(1-α)/N)
    = 0.3 points for N = 10,000; the test allows three of each."""
    alpha, samples = 0.9, 300
    inst = seed_with(FACTORS, samples, alpha)
    result = Planner(inst).solve()
    c = result.confidence
    assert result.status == "optimal"
    assert verify_plan(inst, result.plan).ok
    assert c.needed == needed(alpha, samples) == 270 and c.in_sample >= c.needed / samples
    tolerance = 3 * math.sqrt(alpha * (1 - alpha) / samples) + 3 * math.sqrt(alpha * (1 - alpha) / CHECK_SAMPLES)
    assert c.out_of_sample >= alpha - tolerance
    assert c.out_of_sample_interval[0] <= c.out_of_sample <= c.out_of_sample_interval[1]
    base = Planner(deterministic(inst)).solve()
    assert result.plan.total_cost > base.plan.total_cost  # the deterministic optimum is late too often
    assert sc.evaluate(inst, base.plan, sc.draw(inst)).on_time.mean() < alpha


# ---------------------------------------------------------------- brute force on small instances


def small_instance(seed: int, alpha: float, samples: int = 10):
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
        "schedule": {"deadline": 400.0, "extra_time": 0.0, "cadence": {"min": 30.0, "step": 5.0}},
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
        "uncertainty": {
            "samples": samples,
            "seed": seed,
            "confidence": alpha,
            "factors": [
                {
                    "name": "throughput",
                    "paths": ["inference.shapes[*].tokens_per_gpu_s"],
                    "dist": "normal",
                    "mean": 1.0,
                    "sd": 0.15,
                },
                {
                    "name": "lifetimes",
                    "paths": ["environment.occupancy.median"],
                    "dist": "lognormal",
                    "median": 1.0,
                    "sigma": 0.3,
                },
                {
                    "name": "updates",
                    "paths": ["training.update_time.reference_time"],
                    "dist": "uniform",
                    "low": 0.8,
                    "high": 1.4,
                },
            ],
        },
    }
    return validate(data, f"small-{seed}.yaml")


def brute_force(inst) -> float:
    """The cheapest total cost over every (cadence, K, groups, nodes, replicas) plan that meets MODEL §3 at
    nominal values (the scenario evaluator with every multiplier 1: realised cadence = planned) and is
    on time in at least ceil(α·S) of the scenarios (solver.scenarios.evaluate); replicas by bisection
    (both checks only get easier with more). Shares nothing with the confidence MIP."""
    unc = inst.uncertainty
    scen = sc.draw(inst)
    both = sc.from_draws(inst, np.vstack([np.ones((1, len(unc.factors))), scen.draws]))  # nominal first
    k = needed(unc.confidence, scen.size)
    pool, gpg = inst.gpu_pools[0].gpus, inst.training.gpus_per_group
    n, node = inst.workload.iterations, inst.environment.node_types[0]
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

    def ok(L, K, m, N, x) -> bool:
        out = sc.evaluate(inst, plan(L, K, m, N, x), both)
        return out.cadence[0] <= L * (1 + 1e-9) and int(out.on_time[1:].sum()) >= k

    for L in np.arange(30.0, 40.0 + 1e-9, 5.0):
        hours = n * L / 3600.0
        for K in (1, 2):
            for m in range(1, pool // gpg + 1):
                for N in range(0, node.max_nodes + 1):
                    fixed = m * gpg * 1.0 + N * node.hour_cost
                    top = pool - m * gpg
                    if fixed * hours >= best or top < 0 or not ok(L, K, m, N, top):
                        continue
                    lo, hi = -1, top  # ok(hi) holds; find the fewest replicas that pass
                    while hi - lo > 1:
                        mid = (lo + hi) // 2
                        lo, hi = (lo, mid) if ok(L, K, m, N, mid) else (mid, hi)
                    best = min(best, (fixed + hi * 1.0) * hours)
    return best


@pytest.mark.parametrize(
    "seed,alpha", [(1, 0.6), (4, 0.9), (7, 0.8), (15, 0.8)]
)  # each above its deterministic optimum
def test_the_mip_agrees_with_brute_force(seed, alpha):
    inst = small_instance(seed, alpha)
    result = Planner(inst).solve("total_cost")
    expected = brute_force(inst)
    if not math.isfinite(expected):
        assert result.status == "infeasible"
        return
    assert result.status == "optimal"
    assert result.objective_value == pytest.approx(expected, rel=1e-9)
    assert verify_plan(inst, result.plan).ok
    assert result.confidence.in_sample >= needed(alpha, 10) / 10


@pytest.mark.parametrize("seed,alpha", [(1, 0.5), (4, 0.5), (7, 0.5), (7, 0.6)])  # each above its deterministic optimum
def test_the_mip_agrees_with_brute_force_at_low_confidence(seed, alpha):
    """Low α leaves many scenarios late: the hull rows and corner bounds (solver/confidence_cuts.py) carry
    most of the search there."""
    inst = small_instance(seed, alpha, samples=30)
    result = Planner(inst).solve("total_cost")
    expected = brute_force(inst)
    assert math.isfinite(expected) and result.status == "optimal"
    assert result.objective_value == pytest.approx(expected, rel=1e-9)
    assert result.objective_value > Planner(deterministic(inst)).solve("total_cost").objective_value
    assert verify_plan(inst, result.plan).ok
    assert result.confidence.in_sample >= needed(alpha, 30) / 30


def test_a_higher_confidence_never_costs_less():
    costs = []
    for alpha in (0.0, 0.3, 0.6, 0.9, 1.0):
        result = Planner(small_instance(7, alpha, samples=40)).solve("total_cost")
        costs.append(result.plan.total_cost if result.plan is not None else math.inf)
    assert all(a <= b * (1 + 1e-9) for a, b in zip(costs, costs[1:]))
    assert costs[0] == pytest.approx(Planner(deterministic(small_instance(7, 0.0))).solve("total_cost").plan.total_cost)


# ---------------------------------------------------------------- the command


def run(*args):
    from click.testing import CliRunner

    from trainground.cli import main

    return CliRunner().invoke(main, [str(a) for a in args])


def test_confidence_without_an_uncertainty_section_is_bad_input():
    out = run("solve", SEED, "--confidence", "0.9")
    assert out.exit_code == 2 and "uncertainty" in out.output and "Traceback" not in out.output


def test_a_factor_on_host_fields_is_bad_input_naming_the_field(tmp_path):
    import yaml

    data = yaml.safe_load(SEED.read_text())
    data["uncertainty"] = {
        "samples": 20,
        "factors": [
            {
                "name": "density",
                "dist": "uniform",
                "low": 0.9,
                "high": 1.1,
                "paths": ["environment.node_types[0].density.container"],
            }
        ],
    }
    path = tmp_path / "hosts.yaml"
    path.write_text(yaml.safe_dump(data))
    out = run("solve", path, "--confidence", "0.9")
    assert out.exit_code == 2 and "environment.node_types[0].density.container" in out.output


def test_solve_json_carries_the_confidence_object(tmp_path):
    import json

    import yaml

    data = yaml.safe_load(SEED.read_text())
    data["uncertainty"] = {"samples": 100, "factors": FACTORS}
    path = tmp_path / "unc.yaml"
    path.write_text(yaml.safe_dump(data))
    out = run("solve", path, "--confidence", "0.8", "--json")
    assert out.exit_code == 0, out.output
    c = json.loads(out.output)["confidence"]
    assert set(c) >= {"target", "scenarios", "in_sample", "out_of_sample", "out_of_sample_interval", "check_samples"}
    assert c["target"] == 0.8 and c["scenarios"] == 100 and c["in_sample"] >= 0.8
