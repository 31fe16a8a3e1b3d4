"""The compact staged model (capacity: fixed, solver/stages/compact.py) searched by the hull of solver/stages/hull.py
gives the pair model's optimum (solver/stages/model.py, which a cap on the total cost uses) under every objective
and every restriction a driver passes: a makespan cap, an hourly cap, a card cap and the hold allowance."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from trainground.models.load import validate
from trainground.solver.stages.solve import StagedPlanner

ROOT = Path(__file__).resolve().parents[1]
NO_CAP = 1e15  # a total-cost cap that never binds: the pair model answers


def small(deadline: str = "7d", step: str = "10s", **planning) -> StagedPlanner:
    data = yaml.safe_load((ROOT / "instances" / "seed-week-stages.yaml").read_text())
    data["schedule"]["cadence"] = {"min": "400s", "max": "900s", "step": step}
    data["schedule"]["deadline"] = deadline
    if planning:
        data["planning"] = planning
    return StagedPlanner(validate(data, "small.yaml"))


def _figures(result) -> tuple:
    plan = result.plan
    return (plan.total_cost, plan.makespan_s, plan.hourly_cost)


@pytest.fixture(scope="module")
def planner():
    return small()


@pytest.mark.parametrize("objective", ["total_cost", "hourly_cost", "makespan"])
@pytest.mark.parametrize(
    "restriction",
    [{}, {"max_makespan": 600_500.0}, {"max_hourly_cost": 19_500.0}, {"max_inference_gpus": 5_600}],
    ids=["none", "makespan-cap", "hourly-cap", "card-cap"],
)
def test_the_compact_hull_gives_the_pair_models_optimum(planner, objective, restriction):
    compact = planner.solve(objective, **restriction)
    pairs = planner.solve(objective, max_total_cost=NO_CAP, **restriction)
    assert compact.status == pairs.status
    if compact.plan is None:
        return
    assert compact.model_size["compact_runs"] >= 1 and "compact_runs" not in pairs.model_size
    assert _figures(compact) == pytest.approx(_figures(pairs), rel=1e-7)
    for name, cap in restriction.items():
        value = {"max_makespan": compact.plan.makespan_s, "max_hourly_cost": compact.plan.hourly_cost}.get(name)
        value = compact.plan.inference_gpus if name == "max_inference_gpus" else value
        assert value <= cap * (1 + 1e-9)


def test_the_compact_hull_takes_the_allowance_under_hold():
    planner = small("7.5d", "25s", basis="hold")  # room for faster plans than the cheapest
    free = planner.solve()
    slack = planner.inst.schedule.deadline - free.plan.makespan_s
    for allowance in (slack + 600.0,):  # closes the plan found without an allowance
        compact = planner.solve(allowance=allowance)
        pairs = planner.solve(allowance=allowance, max_total_cost=NO_CAP)
        assert compact.status == pairs.status == "optimal"
        assert _figures(compact) == pytest.approx(_figures(pairs), rel=1e-7)
        assert compact.plan.makespan_s + allowance <= planner.inst.schedule.deadline * (1 + 1e-9)
        assert compact.plan.total_cost > free.plan.total_cost  # the allowance closes the plan found without one
