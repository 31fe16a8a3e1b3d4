"""The MIP's optimum equals a brute-force enumeration of cadence × K × integer counts (MODEL.md §4)."""

from __future__ import annotations

from hypothesis import HealthCheck, event, given, settings

from solver.solve import solve_instance
from tests import reference
from tests.strategies import instance_of, small_instances

OBJECTIVES = ("total_cost", "hourly_cost", "makespan")
VALUE = {"total_cost": "total", "hourly_cost": "hourly", "makespan": "makespan"}


def _close(a: float, b: float, rel: float = 1e-9) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(small_instances())
def test_mip_matches_brute_force(data):
    inst = instance_of(data)
    points = reference.feasible_points(inst)
    for objective in OBJECTIVES:
        expected = reference.best(points, objective)
        result = solve_instance(inst, objective, diagnose=False)
        event(f"{objective}: {result.status}")
        if expected is None:
            assert result.status == "infeasible", (objective, result.plan)
            continue
        assert result.status == "optimal", (objective, result.status, expected)
        got = {"total": result.plan.total_cost, "hourly": result.plan.hourly_cost, "makespan": result.plan.makespan_s}
        assert _close(got[VALUE[objective]], getattr(expected, VALUE[objective])), (objective, got, expected)
        tie = {"total_cost": "makespan", "hourly_cost": "makespan", "makespan": "total"}[objective]
        assert _close(got[tie], getattr(expected, tie), 1e-7), (objective, "tie-break", got, expected)
