"""Cost ties are said and broken the same way every time: MODEL.md §4's order, then the fewest GPUs, then
the fewest nodes (solver/mip/ties.py); the tie-break never changes the optimum's cost."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests import reference
from tests.test_known_optima import base
from trainground.cli import main
from trainground.models.edits import load_edited
from trainground.models.load import load_instance, validate
from trainground.solver.solve import Planner, solve_instance
from trainground.solver.tolerances import TIE_TOL

ROOT = Path(__file__).resolve().parents[1]
TWO_POOLS = ROOT / "tests" / "data" / "compare" / "two-pools.yaml"
RESERVED = ["gpu_pools[*].billing=reserved"]
OBJECTIVES = ("total_cost", "hourly_cost", "makespan")


def _reserved_hand():
    data = copy.deepcopy(base())
    data["gpu_pools"][0]["billing"] = "reserved"  # every GPU billed: replicas beyond the need cost nothing
    return validate(data, "hand.yaml")


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_a_reserved_pool_ties_and_the_plan_has_the_fewest_cards_that_carry_the_demand(objective):
    inst = _reserved_hand()
    result = solve_instance(inst, objective)
    plan, met = result.plan, result.metrics
    rate = inst.inference.availability * inst.inference.shapes[0].tokens_per_gpu_s
    assert plan.inference_gpus == math.ceil(met.token_demand_per_s / rate - 1e-9)
    assert result.ties["plans"] >= 2 and result.ties["decided_by"].startswith("fewest GPUs")
    assert result.ties["sentence"].startswith(f"at least {result.ties['plans']} plans cost the same")
    expected = reference.best(reference.feasible_points(inst), objective)  # the cost is the enumeration's
    got = {"total_cost": plan.total_cost, "hourly_cost": plan.hourly_cost, "makespan": plan.makespan_s}[objective]
    want = {"total_cost": expected.total, "hourly_cost": expected.hourly, "makespan": expected.makespan}[objective]
    assert got == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("objective", ("total_cost", "makespan"))
def test_on_two_reserved_pools_no_tied_plan_has_fewer_gpus(objective):
    inst = load_edited(TWO_POOLS, RESERVED)
    result = solve_instance(inst, objective)
    plan = result.plan
    assert result.ties and result.ties["plans"] >= 2
    gpus = plan.inference_gpus + plan.training_gpus
    # any plan as cheap and as fast on fewer inference cards must have more GPUs in all (more training)
    cap = plan.total_cost * (1 + TIE_TOL)
    other = Planner(inst).solve(
        "total_cost", max_makespan=plan.makespan_s, max_total_cost=cap, max_inference_gpus=plan.inference_gpus - 1
    )
    if other.plan is not None:
        assert other.plan.inference_gpus + other.plan.training_gpus >= gpus
    again = solve_instance(inst, objective).plan  # deterministic: the same plan on a fresh model
    assert again.model_dump() == plan.model_dump()


def test_without_equals_nothing_is_said():
    result = solve_instance(load_instance(ROOT / "instances" / "seed-week-75.yaml"))
    assert result.ties is None and "ties" not in result.to_json()


def test_solve_says_the_tie():
    run = CliRunner().invoke(main, ["solve", str(TWO_POOLS), "--set", RESERVED[0]])
    assert run.exit_code == 0, run.output
    words = " ".join(run.output.split())
    assert "ties: at least" in words and "this one has the fewest GPUs" in words


def _two_node_types(first_double: bool) -> dict:
    """The seed with a second node type twice as dense, with twice the cores and memory, at twice the price:
    20 standard nodes and 10 double ones hold its sandboxes at the same cost."""
    import yaml

    data = yaml.safe_load((ROOT / "instances" / "seed-week-75.yaml").read_text(encoding="utf-8"))
    data["planning"] = {"basis": "steady_state"}
    std = data["environment"]["node_types"][0]
    double = dict(
        std,
        name="double",
        cores=2 * std["cores"],
        memory_gb=2 * std["memory_gb"],
        density={b: 2 * d for b, d in std["density"].items()},
        hour_cost=2 * std["hour_cost"],
    )
    data["environment"]["node_types"] = [double, std] if first_double else [std, double]
    return data


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_node_types_that_trade_at_one_price_go_to_the_fewest_nodes_whatever_their_order(objective):
    plans = []
    for first_double in (False, True):
        result = solve_instance(validate(_two_node_types(first_double), "two-node-types.yaml"), objective)
        plans.append(result.plan)
        counts = {n.type: n.count for n in result.plan.local_nodes}
        if result.ties:  # said when the equal plan on more nodes was the one found first
            assert result.ties["decided_by"].endswith("fewest nodes")
        assert counts["standard"] == 0 and counts["double"] > 0, counts  # a standard pair costs what a double does
    one, other = plans
    assert {n.type: n.count for n in one.local_nodes} == {n.type: n.count for n in other.local_nodes}
    assert one.total_cost == pytest.approx(other.total_cost, rel=1e-12) and one.inference == other.inference
