"""MODEL.md §13 in the MIP: on small random instances with a reliability section and a preemptible pool,
the optimum equals the brute-force enumeration (tests/reference.py, which reads §13 on its own) under
every objective, tie-breaks included; and the terms really move the optimum."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings

from tests import reference
from tests.strategies import examples, instance_of, reliable_instances
from trainground.solver.solve import Planner
from trainground.solver.verify.plan import verify_plan

OBJECTIVES = ("total_cost", "hourly_cost", "makespan")
VALUE = {"total_cost": "total", "hourly_cost": "hourly", "makespan": "makespan"}
EXAMPLES = examples(60)


def _close(a: float, b: float, rel: float = 1e-9) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def test_goodput_matches_brute_force():
    seen = {"feasible": 0, "slowed": 0, "infeasible": 0}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(reliable_instances())
    def check(data):
        inst = instance_of(data)
        points = reference.feasible_points(inst)
        planner = Planner(inst)  # one live model, re-solved under each objective as the drivers do
        for objective in OBJECTIVES:
            expected = reference.best(points, objective)
            result = planner.solve(objective)
            if expected is None:
                assert result.status == "infeasible", (objective, result.plan)
                seen["infeasible"] += objective == "total_cost"
                continue
            assert result.status == "optimal", (objective, result.status, expected)
            plan = result.plan
            got = {"total": plan.total_cost, "hourly": plan.hourly_cost, "makespan": plan.makespan_s}
            assert _close(got[VALUE[objective]], getattr(expected, VALUE[objective])), (objective, got, expected)
            tie = {"total_cost": "makespan", "hourly_cost": "makespan", "makespan": "total"}[objective]
            assert _close(got[tie], getattr(expected, tie), 1e-7), (objective, "tie-break", got, expected)
            assert verify_plan(inst, plan).ok
            if objective == "total_cost":
                seen["feasible"] += 1
                gamma = result.metrics.training_goodput
                seen["slowed"] += gamma is not None and gamma < 1 - 1e-6 and math.isfinite(plan.makespan_s)

    check()
    # Enough plans, and enough of them slowed by failures, for the agreement to mean something; and some
    # instances with no plan at all (goodput <= 0, the weight sync, or the deadline).
    assert seen["feasible"] >= EXAMPLES // 4, seen
    assert seen["slowed"] >= seen["feasible"] // 2, seen
    assert seen["infeasible"] >= 10, seen
