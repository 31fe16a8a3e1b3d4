"""The MIP's optimum equals a brute-force enumeration of cadence × K × integer counts (MODEL.md §4)."""

from __future__ import annotations

from hypothesis import HealthCheck, event, given, settings

from tests import reference
from tests.strategies import examples, instance_of, small_instances
from trainground.solver.solve import Planner
from trainground.solver.table.bounds import hourly_lower_bound
from trainground.solver.table.pairs import build

OBJECTIVES = ("total_cost", "hourly_cost", "makespan")
VALUE = {"total_cost": "total", "hourly_cost": "hourly", "makespan": "makespan"}


def _close(a: float, b: float, rel: float = 1e-9) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


@settings(
    max_examples=examples(40),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(small_instances())
def test_mip_matches_brute_force(data):
    inst = instance_of(data)
    points = reference.feasible_points(inst)
    _check_cost_bound(inst, points)
    planner = Planner(inst)  # one live model, re-solved under each objective as the drivers do
    for objective in OBJECTIVES:
        expected = reference.best(points, objective)
        result = planner.solve(objective)
        event(f"{objective}: {result.status}")
        if expected is None:
            assert result.status == "infeasible", (objective, result.plan)
            continue
        assert result.status == "optimal", (objective, result.status, expected)
        got = {"total": result.plan.total_cost, "hourly": result.plan.hourly_cost, "makespan": result.plan.makespan_s}
        assert _close(got[VALUE[objective]], getattr(expected, VALUE[objective])), (objective, got, expected)
        tie = {"total_cost": "makespan", "hourly_cost": "makespan", "makespan": "total"}[objective]
        assert _close(got[tie], getattr(expected, tie), 1e-7), (objective, "tie-break", got, expected)


def _check_cost_bound(inst, points) -> None:
    """The bound that closes pairs must be valid: at every (cadence, K) where the enumeration finds a
    plan, the bound is at most that plan's hourly cost."""
    pairs = build(inst)
    bound = hourly_lower_bound(inst, pairs)
    rows: dict[tuple[float, int], list[int]] = {}
    for row, (cadence, kept, _) in enumerate(pairs.keys()):
        rows.setdefault((cadence, kept), []).append(row)
    for point in points:
        # The row of the point's (cadence, K) and makespan: with start-up counted, the training group
        # count sets U(m) in the makespan, one row per count.
        same = [
            r
            for r in rows.get((round(point.cadence, 9), point.kept), [])
            if abs(pairs.makespan[r] - point.makespan) <= 1e-9 * point.makespan
        ]
        for row in same:
            assert bound[row] <= point.hourly * (1 + 1e-9) + 1e-9, (point, bound[row])


def test_cost_bound_takes_resource_rows_one_at_a_time():
    """Two backends, one bound by density and one by cores: summing each backend's worst row would
    exceed what the nodes must cost."""
    data = {
        "name": "footprint",
        "workload": {"iterations": 10, "batch_trajectories": 10, "group_size": 1, "tokens_per_attempt": 10},
        "schedule": {"deadline": 2000, "cadence": {"min": 50, "max": 200, "step": 5}},
        "gpu_pools": [{"name": "main", "gpus": 16, "gpu_hour_cost": 0.01}],
        "inference": {"shapes": [{"name": "s", "pool": "main", "gpus_per_replica": 1, "tokens_per_gpu_s": 10}]},
        "training": {
            "pool": "main",
            "gpus_per_group": 1,
            "update_time": {"law": "inverse", "reference_gpus": 1, "reference_time": 10},
        },
        "environment": {
            "occupancy": {"distribution": "empirical", "samples": [500, 500]},
            "backends": [{"name": "a", "share": 0.5, "cores": 0.1}, {"name": "b", "share": 0.5, "cores": 1.0}],
            "node_types": [{"name": "n", "cores": 10, "density": {"a": 1, "b": 100}, "hour_cost": 1.0}],
        },
        "freshness": {"max_versions_kept": 1, "overrun_policy": "downweight"},
    }
    inst = instance_of(data)
    planner = Planner(inst)  # one live model, re-solved under each objective as the drivers do
    for objective in OBJECTIVES:
        expected = reference.best(reference.feasible_points(inst), objective)
        result = planner.solve(objective)
        got = {"total": result.plan.total_cost, "hourly": result.plan.hourly_cost, "makespan": result.plan.makespan_s}
        assert _close(got[VALUE[objective]], getattr(expected, VALUE[objective])), (objective, got, expected)
