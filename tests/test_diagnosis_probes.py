"""The diagnosis's re-solves with start-up counted (MODEL §8, the hold basis) list fewer rows than a solve
of the same instance, and must give the same answers (drivers/diagnosis/feasibility.py):

- a budget leaves out the group counts no plan within it can pay for (solver.table.group_counts.budget_groups):
  every row it leaves out is one the cost search's own bound closes;
- ``Feasibility.shortest`` (the shortest makespan, first among each pair's fewest groups, then over the
  rows no longer than that plan) and ``Feasibility.cheapest`` (the least cost, first among the fewest
  groups, then over every row with that cost as the budget) equal a plain solve of the instance.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.strategies import examples, instance_of, small_instances
from trainground.drivers.diagnosis.feasibility import Feasibility
from trainground.models.edits import edited
from trainground.solver.solve import Planner
from trainground.solver.table.pairs import build
from trainground.solver.tolerances import REL_TOL

SETTINGS = settings(
    max_examples=examples(12), deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)


def _with_startup(data: dict, pools: float) -> dict:
    data["schedule"]["count_startup"] = True
    data["schedule"]["deadline"] *= 1.5
    for pool in data["gpu_pools"]:
        pool["gpus"] = int(pool["gpus"] * pools)  # room for many group counts per pair
    return data


@SETTINGS
@given(small_instances(), st.sampled_from([1.0, 4.0]), st.sampled_from([0.3, 0.6, 1.0]))
def test_a_budget_leaves_out_only_rows_its_cost_bound_closes(data, pools, share):
    data = _with_startup(data, pools)
    data["limits"] = {"max_hourly_cost": None, "max_total_cost": None}
    free = Planner(instance_of(data))
    if not free.pairs.size:
        return
    p = free.pairs
    hourly, total = free.hourly_lb, free.hourly_lb * p.makespan / 3600.0
    finite = np.isfinite(hourly)
    if not finite.any():
        return
    budgets = {
        "max_hourly_cost": float(np.min(hourly[finite]) + share * np.ptp(hourly[finite])),
        "max_total_cost": float(np.min(total[finite]) + share * np.ptp(total[finite])),
    }
    for name, limit in budgets.items():
        data["limits"] = {"max_hourly_cost": None, "max_total_cost": None, name: limit}
        kept = set(build(instance_of(data)).keys())
        bound = hourly if name == "max_hourly_cost" else total
        for row, key in enumerate(p.keys()):
            if key not in kept:
                assert bound[row] > limit * (1 + REL_TOL), (name, key, bound[row], limit)


def _same_plan(a, b) -> None:
    assert (a.plan is None) == (b.plan is None), (a.status, b.status)
    if a.plan is None:
        return
    for name in ("makespan_s", "total_cost", "hourly_cost"):
        assert math.isclose(getattr(a.plan, name), getattr(b.plan, name), rel_tol=1e-9), name


@SETTINGS
@given(small_instances(), st.sampled_from([1.0, 4.0]))
def test_the_shortest_and_the_cheapest_plans_of_the_probes_are_a_solves(data, pools):
    data = _with_startup(data, pools)
    data["limits"] = {"max_hourly_cost": None, "max_total_cost": None}
    inst = instance_of(data)
    checker, plain = Feasibility(inst), Planner(inst)
    _same_plan(checker.shortest({}), plain.solve("makespan"))
    for criterion in ("total_cost", "hourly_cost"):
        _same_plan(checker.cheapest({}, criterion), plain.solve(criterion))
    # a budget in the instance: the probe keeps it and solves on every row
    budgeted = edited(inst, {"limits.max_total_cost": 1e12})
    _same_plan(Feasibility(budgeted).cheapest({}, "hourly_cost"), Planner(budgeted).solve("hourly_cost"))
    assert checker.solves == 3
