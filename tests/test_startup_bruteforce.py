"""MODEL.md §8 with ``count_startup: true``: the MIP's optimum equals the brute-force enumeration (tests/reference.py)
under every objective, for each group correlation and overrun policy forced in turn, and the start-up really
enters the optimum (its makespan is not n·L + extra_time). test_bruteforce.py draws count_startup among
everything else; here each (correlation, policy) pair is shown to be reached with feasible plans."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings

from tests import reference
from tests.strategies import examples, instance_of, small_instances
from trainground.solver.solve import Planner

OBJECTIVES = ("total_cost", "hourly_cost", "makespan")
VALUE = {"total_cost": "total", "hourly_cost": "hourly", "makespan": "makespan"}
EXAMPLES = examples(8)


def _close(a: float, b: float, rel: float = 1e-9) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


@pytest.mark.parametrize("policy", ["drop", "downweight"])
@pytest.mark.parametrize("correlation", ["independent", "comonotone"])
def test_count_startup_matches_brute_force(correlation, policy):
    seen = {"feasible": 0, "startup_counted": 0}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(small_instances())
    def check(data):
        data["schedule"]["count_startup"] = True
        data["schedule"]["deadline"] *= 1.5  # room for the fill, so that most examples have a plan
        data["freshness"]["group_correlation"] = correlation
        data["freshness"]["overrun_policy"] = policy
        inst = instance_of(data)
        points = reference.feasible_points(inst)
        planner = Planner(inst)  # one live model, re-solved under each objective as the drivers do
        for objective in OBJECTIVES:
            expected = reference.best(points, objective)
            result = planner.solve(objective)
            if expected is None:
                assert result.status == "infeasible", (objective, result.plan)
                continue
            assert result.status == "optimal", (objective, result.status, expected)
            plan = result.plan
            got = {"total": plan.total_cost, "hourly": plan.hourly_cost, "makespan": plan.makespan_s}
            assert _close(got[VALUE[objective]], getattr(expected, VALUE[objective])), (objective, got, expected)
            if objective == "total_cost":
                seen["feasible"] += 1
                steady = inst.workload.iterations * plan.cadence_s + inst.schedule.extra_time
                seen["startup_counted"] += not math.isclose(plan.makespan_s, steady, rel_tol=1e-9)

    check()
    # The enumeration found plans often enough for the agreement to mean something, and their makespans
    # carry the fill and the last update.
    assert seen["feasible"] >= EXAMPLES // 4, seen
    assert seen["startup_counted"] == seen["feasible"], seen
