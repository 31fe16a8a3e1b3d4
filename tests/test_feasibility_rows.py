"""A feasibility question (the diagnosis's probes) looks at one row per (cadence, K) pair: the fewest
training groups among the candidates (solver.solve.Planner.fewest_groups_only). Against brute-force
enumeration (tests/reference.py) on small random instances with the start-up counted (so each pair has a
row per group count, MODEL §8) and with §13's goodput: a plan exists exactly when the enumeration finds one,
also under a makespan cap that cuts the slow rows of a pair (the fewest groups are the slowest), and with a
budget the reduction is not made."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import reference
from tests.strategies import instance_of, reliable_instances, small_instances
from trainground.solver.solve import Planner


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(small_instances() | reliable_instances(), st.floats(0.0, 1.0))
def test_a_plan_exists_iff_the_enumeration_finds_one(data, cut):
    data["schedule"]["count_startup"] = True
    data["schedule"]["deadline"] *= 1.5
    data["limits"] = {"max_hourly_cost": None, "max_total_cost": None}
    inst = instance_of(data)
    points = reference.feasible_points(inst)
    planner = Planner(inst)
    spans = sorted(p.makespan for p in points) if points else []
    cap = spans[int(cut * (len(spans) - 1))] if spans else None
    for max_makespan in (None, cap):
        found = planner.solve("makespan", max_makespan=max_makespan, feasibility=True)
        expected = [p for p in points if max_makespan is None or p.makespan <= max_makespan * (1 + 1e-9)]
        assert (found.plan is not None) == bool(expected), (max_makespan, found.status)
        if found.plan is not None and max_makespan is not None:
            assert found.plan.makespan_s <= max_makespan * (1 + 1e-9)


def test_rows_of_one_pair_reduce_to_the_fewest_groups_and_budgets_keep_them_all():
    data = yaml.safe_load((Path(__file__).resolve().parents[1] / "instances" / "seed-week-75.yaml").read_text())
    data["schedule"]["count_startup"] = True
    data["planning"] = {"basis": "steady_state"}
    planner = Planner(instance_of(data))
    p, every = planner.pairs, planner.candidates()
    kept = planner.fewest_groups_only(every)
    pairs = {(c, k) for c, k in zip(p.cadence[every].tolist(), p.kept[every].tolist())}
    assert kept.sum() == len(pairs) < every.sum()
    for row in np.flatnonzero(kept):
        same = every & (p.cadence == p.cadence[row]) & (p.kept == p.kept[row])
        assert p.groups[row] == p.groups[same].min()
    data["limits"] = {"max_total_cost": 1e9}
    budgeted = Planner(instance_of(data))
    assert np.array_equal(budgeted.fewest_groups_only(budgeted.candidates()), budgeted.candidates())
