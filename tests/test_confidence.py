"""Confidence solves (MODEL.md §9, sample average approximation): the MIP against a test-only brute force,
the deterministic optimum in the degenerate cases, monotonicity in α, out-of-sample shares, the verifier."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.confidence_reference import brute_force, small_instance
from tests.strategies import cases
from trainground.models.edits import load_edited
from trainground.models.load import validate
from trainground.solver.confidence.planning import CHECK_SAMPLES, needed
from trainground.solver.solve import Planner
from trainground.solver.uncertainty import scenarios as sc
from trainground.solver.verify.plan import verify_plan

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


@pytest.mark.parametrize(
    "seed,alpha", cases([(15, 0.8), (1, 0.6), (4, 0.9), (7, 0.8)], 1)
)  # each above its deterministic optimum (the CI profile runs the first, whose enumeration is the shortest: tests/strategies.py)
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


@pytest.mark.parametrize(
    "seed,alpha", cases([(1, 0.5), (4, 0.5), (7, 0.5), (7, 0.6)], 1)
)  # each above its deterministic optimum
def test_the_mip_agrees_with_brute_force_at_low_confidence(seed, alpha):
    """Low α leaves many scenarios late: the hull rows and corner bounds (solver/confidence/cuts.py) carry
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
